# The mcpx binary. vendorHash is the NAR hash of `go mod vendor`'s output
# for go.mod/go.sum as committed; deploy's TestFlake recomputes it (go mod
# vendor -o DIR; nix hash path DIR) and fails when go.sum changes without it.
#
# runtimes are put on the daemon's PATH, after the caller's own (so a
# user's git or node wins): what scripts (`mcpx run`, code mode) and
# servers' commands find when the service's PATH has nothing else. The
# default is the original's set: git, deno, bun and node. Choose another
# with `mcpx.override { runtimes = [ pkgs.git pkgs.nodejs ]; }`, or none
# with `runtimes = [ ]` (the flake's `mcpx-bare`).
{ lib, buildGoModule, makeWrapper, git, deno, bun, nodejs, src, version ? "dev"
, runtimes ? [ git deno bun nodejs ] }:

buildGoModule {
  pname = "mcpx";
  inherit version src;
  vendorHash = "sha256-ncqbX4XP3FoUdoWa+0DxoLSO9JM5Hb2EZSsN8vLuQG0=";
  subPackages = [ "cmd/mcpx" ];
  env.CGO_ENABLED = "0";
  ldflags = [ "-s" "-w" ];
  nativeBuildInputs = lib.optionals (runtimes != [ ]) [ makeWrapper ];
  postInstall = lib.optionalString (runtimes != [ ]) ''
    wrapProgram $out/bin/mcpx --suffix PATH : ${lib.makeBinPath runtimes}
  '';
  # The tests start real children (node, npm servers, nix, gopls) that a
  # build sandbox does not have; CI runs them (`make test`).
  doCheck = false;
  passthru = { inherit runtimes; };
  meta = {
    description = "Broker for MCP servers: one daemon, scoped pooled children, many callers";
    mainProgram = "mcpx";
    platforms = lib.platforms.unix;
  };
}

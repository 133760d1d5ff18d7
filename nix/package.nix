# The mcpx binary. vendorHash is the NAR hash of `go mod vendor`'s output
# for go.mod/go.sum as committed; deploy's TestFlake recomputes it (go mod
# vendor -o DIR; nix hash path DIR) and fails when go.sum changes without it.
{ lib, buildGoModule, src, version ? "dev" }:

buildGoModule {
  pname = "mcpx";
  inherit version src;
  vendorHash = "sha256-81eKSj08RS5subm/lc5D5AZ3nzd51cIfcpI/2NJKVGs=";
  subPackages = [ "cmd/mcpx" ];
  env.CGO_ENABLED = "0";
  ldflags = [ "-s" "-w" ];
  # The tests start real children (node, npm servers, nix, gopls) that a
  # build sandbox does not have; CI runs them (`make test`).
  doCheck = false;
  meta = {
    description = "Broker for MCP servers: one daemon, scoped pooled children, many callers";
    mainProgram = "mcpx";
    platforms = lib.platforms.unix;
  };
}

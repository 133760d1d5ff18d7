{
  description = "mcpx: one daemon brokering MCP servers, per user";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      forAll = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      # mcpx wraps git, deno, bun and node onto its PATH (nix/package.nix:
      # `mcpx.override { runtimes = [ ... ]; }` for another set);
      # mcpx-bare is the binary alone.
      packages = forAll (pkgs: rec {
        mcpx = pkgs.callPackage ./nix/package.nix { src = self; };
        mcpx-bare = mcpx.override { runtimes = [ ]; };
        default = mcpx;
      });

      # Both modules run `mcpx serve` as a systemd *user* service: the daemon
      # is per user and its children run as that user. They take the
      # package from this flake unless services.mcpx.package says otherwise.
      nixosModules.default = { pkgs, lib, ... }: {
        imports = [ ./nix/nixos.nix ];
        services.mcpx.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      };
      darwinModules.default = { pkgs, lib, ... }: {
        imports = [ ./nix/darwin.nix ];
        services.mcpx.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      };
      homeManagerModules.default = { pkgs, lib, ... }: {
        imports = [ ./nix/home-manager.nix ];
        services.mcpx.package = lib.mkDefault self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      };
    };
}

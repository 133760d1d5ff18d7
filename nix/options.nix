# The options the NixOS and home-manager modules share (services.mcpx).
{ lib, pkgs }:

let
  inherit (lib) mkOption mkEnableOption types;
in
{
  enable = mkEnableOption "the mcpx broker as a systemd user service";

  package = mkOption {
    type = types.package;
    description = "The mcpx package.";
  };

  config = mkOption {
    type = types.nullOr (types.either types.path types.attrs);
    default = null;
    description = ''
      The broker's config: a file, or an attribute set written as JSON.
      null: the daemon's default ($XDG_CONFIG_HOME/mcpx/config.json, else
      the built-in demo server).
    '';
  };

  stateDir = mkOption {
    type = types.str;
    default = "%h/.local/state/mcpx";
    description = "The state directory (systemd specifiers allowed: %h is the home directory).";
  };

  extraPackages = mkOption {
    type = types.listOf types.package;
    default = [ ];
    description = "Packages on the service's PATH: what the servers' commands run (nodejs for npx, uv, nix, ...).";
  };

  writablePaths = mkOption {
    type = types.listOf types.str;
    default = [ "%h" ];
    description = "Paths the servers may write besides the state directory (ProtectSystem=strict makes the rest read-only).";
  };

  tailnet = {
    enable = mkEnableOption "the embedded tailnet node (mcpx serve --tailnet)";
    hostname = mkOption {
      type = types.nullOr types.str;
      default = null;
      description = "The node's name on the tailnet; null: mcpx's default.";
    };
    authKeyFile = mkOption {
      type = types.nullOr types.str;
      default = null;
      description = "A file holding the auth key that joins the tailnet (never put the key in the store).";
    };
    tags = mkOption {
      type = types.listOf types.str;
      default = [ ];
      description = "Tags the node advertises, e.g. [ \"tag:mcpx\" ].";
    };
  };
}

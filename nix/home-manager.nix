# home-manager: services.mcpx runs `mcpx serve` as this user's systemd user
# service (Linux). On macOS use `mcpx service install` (a launchd agent).
{ config, lib, pkgs, ... }:

let
  cfg = config.services.mcpx;
  svc = import ./service.nix { inherit lib pkgs cfg; };
in
{
  options.services.mcpx = import ./options.nix { inherit lib pkgs; };

  config = lib.mkIf cfg.enable {
    home.packages = [ cfg.package ];
    systemd.user.services.mcpx = {
      Unit.Description = "mcpx MCP broker";
      Install.WantedBy = [ "default.target" ];
      Service = svc.serviceConfig // {
        ExecStart = svc.execStart;
        Environment = [ "PATH=${svc.path}" ];
      };
    };
  };
}

# NixOS: services.mcpx runs `mcpx serve` as a systemd user service in every
# user's manager (never as root: the daemon is per user).
{ config, lib, pkgs, ... }:

let
  cfg = config.services.mcpx;
  svc = import ./service.nix { inherit lib pkgs cfg; };
in
{
  options.services.mcpx = import ./options.nix { inherit lib pkgs; };

  config = lib.mkIf cfg.enable {
    environment.systemPackages = [ cfg.package ];
    systemd.user.services.mcpx = {
      description = "mcpx MCP broker";
      wantedBy = [ "default.target" ];
      environment.PATH = lib.mkForce svc.path;
      serviceConfig = svc.serviceConfig // { ExecStart = svc.execStart; };
    };
  };
}

# nix-darwin: services.mcpx runs `mcpx serve` as a launchd *user* agent
# (launchd.user.agents: the daemon is per user and its children run as
# that user), with the options the NixOS and home-manager modules take.
# The agent is the one `mcpx service install` writes on macOS
# (deploy/templates: dev.mcpx.serve), with its PATH from the package and
# extraPackages. writablePaths is a systemd setting and does nothing here.
{ config, lib, pkgs, ... }:

let
  cfg = config.services.mcpx;
  svc = import ./service.nix { inherit lib pkgs cfg; };
  stateDir = builtins.replaceStrings [ "%h" ] [ "$HOME" ] cfg.stateDir;
in
{
  options.services.mcpx = import ./options.nix { inherit lib pkgs; };

  config = lib.mkIf cfg.enable {
    environment.systemPackages = [ cfg.package ];
    launchd.user.agents.mcpx = {
      # A shell expands $HOME in the state directory (launchd does not).
      command = "/bin/sh -c 'exec " + lib.concatStringsSep " "
        (map (a: "\"${builtins.replaceStrings [ cfg.stateDir ] [ stateDir ] a}\"") svc.argv) + "'";
      serviceConfig = {
        Label = "dev.mcpx.serve";
        RunAtLoad = true;
        KeepAlive = { SuccessfulExit = false; };
        EnvironmentVariables.PATH = svc.path + ":/usr/bin:/bin";
        StandardOutPath = "/tmp/mcpx-serve.log";
        StandardErrorPath = "/tmp/mcpx-serve.log";
        ProcessType = "Interactive";
      };
    };
  };
}

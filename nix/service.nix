# The service both modules install, from services.mcpx (cfg): the command
# line, PATH and the hardening of the systemd user unit mcpx service install
# writes (deploy/templates/mcpx.service).
{ lib, pkgs, cfg }:

let
  configFile =
    if cfg.config == null then null
    else if builtins.isAttrs cfg.config then pkgs.writeText "mcpx-config.json" (builtins.toJSON cfg.config)
    else cfg.config;
  tn = cfg.tailnet;
  args = [ "serve" "--state-dir" cfg.stateDir ]
    ++ lib.optionals (configFile != null) [ "--config" "${configFile}" ]
    ++ lib.optionals tn.enable ([ "--tailnet" ]
      ++ lib.optionals (tn.hostname != null) [ "--tailnet-hostname" tn.hostname ]
      ++ lib.optionals (tn.authKeyFile != null) [ "--tailnet-authkey-file" tn.authKeyFile ]
      ++ lib.optionals (tn.tags != [ ]) [ "--tailnet-tags" (lib.concatStringsSep "," tn.tags) ]);
in
{
  execStart = lib.concatStringsSep " " (map (a: "\"${a}\"") ([ "${cfg.package}/bin/mcpx" ] ++ args));
  path = lib.makeBinPath ([ cfg.package ] ++ cfg.extraPackages);
  serviceConfig = {
    Type = "exec";
    ExecReload = "${pkgs.coreutils}/bin/kill -HUP $MAINPID";
    Restart = "on-failure";
    RestartSec = "2s";
    NoNewPrivileges = true;
    ProtectSystem = "strict";
    PrivateTmp = true;
    ReadWritePaths = [ cfg.stateDir ] ++ cfg.writablePaths;
    RuntimeDirectory = "mcpx";
    RuntimeDirectoryMode = "0700";
  };
}

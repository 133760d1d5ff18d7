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
  argv = [ "${cfg.package}/bin/mcpx" ] ++ args;
  execStart = lib.concatStringsSep " " (map (a: "\"${a}\"") ([ "${cfg.package}/bin/mcpx" ] ++ args));
  path = lib.makeBinPath ([ cfg.package ] ++ cfg.extraPackages);
  serviceConfig = {
    Type = "exec";
    ExecReload = "${pkgs.coreutils}/bin/kill -USR2 $MAINPID"; # upgrade in place (mcpx daemon upgrade)
    Restart = "on-failure";
    RestartSec = "2s";
    # The unit's hardening, which hides none of the user's files from their
    # own broker (no PrivateTmp: it hid /tmp worktrees); the template says
    # what is left out and why.
    NoNewPrivileges = true;
    ProtectSystem = "strict";
    ReadWritePaths = [ cfg.stateDir ] ++ cfg.writablePaths ++ [ "/tmp" "-/var/tmp" "%t" ];
    PrivateUsers = true;
    PrivateMounts = true;
    ProtectKernelTunables = true;
    ProtectKernelModules = true;
    ProtectKernelLogs = true;
    ProtectControlGroups = true;
    ProtectHostname = true;
    KeyringMode = "private";
    RestrictSUIDSGID = true;
    RestrictRealtime = true;
    LockPersonality = true;
    SystemCallArchitectures = "native";
    SystemCallFilter = "~@clock @module @obsolete @raw-io @reboot @swap";
    SystemCallErrorNumber = "EPERM";
    RestrictAddressFamilies = "AF_UNIX AF_INET AF_INET6 AF_NETLINK";
    RuntimeDirectory = "mcpx";
    RuntimeDirectoryMode = "0700";
  };
}

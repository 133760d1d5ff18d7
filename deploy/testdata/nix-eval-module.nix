# Evaluates one of mcpx's modules offline against the nixpkgs stand-in:
# option defaults, overlaid with settings, then the module's config.
# nix eval --impure --json --expr 'import ./nix-eval-module.nix { ... }'
{ module, stub, settings, system ? builtins.currentSystem }:

let
  pkgs = stub.legacyPackages.${system};
  lib = stub.lib;
  call = config: import module { inherit config lib pkgs; };
  isOption = v: builtins.isAttrs v && (v._type or null) == "option";
  defaults = opts: builtins.mapAttrs (_: o: if isOption o then o.default or null else defaults o) opts;
  update = a: b: a // builtins.mapAttrs
    (n: v: if builtins.isAttrs v && builtins.isAttrs (a.${n} or null) && !(lib.isDerivation or (_: false)) v && !(v ? type && v.type == "derivation") then update a.${n} v else v) b;
  options = (call { services.mcpx = { }; }).options.services.mcpx;
  cfg = update (defaults options) settings;
in
(call { services.mcpx = cfg; }).config

# A stand-in for nixpkgs, for checking mcpx's flake offline (nixpkgs cannot
# be fetched here): the few lib functions and packages the flake and its
# modules use, with the same meaning but none of nixpkgs' type checking or
# module merging. buildGoModule makes a derivation that is never built
# (`nix flake check --no-build`), so the package's attributes are checked,
# not its build.
{
  outputs = { self }:
    let
      lib = rec {
        genAttrs = names: f: builtins.listToAttrs (map (n: { name = n; value = f n; }) names);
        mkDefault = v: v;
        mkForce = v: v;
        mkIf = cond: v: if cond then v else { };
        mkOption = o: o // { _type = "option"; };
        mkEnableOption = what: mkOption { type = types.bool; default = false; description = "Whether to enable ${what}."; };
        types = {
          bool = "bool"; str = "str"; path = "path"; attrs = "attrs"; package = "package";
          nullOr = t: "null or ${t}"; either = a: b: "${a} or ${b}"; listOf = t: "list of ${t}";
        };
        optionals = c: l: if c then l else [ ];
        optionalString = c: s: if c then s else "";
        concatStringsSep = builtins.concatStringsSep;
        makeBinPath = ps: concatStringsSep ":" (map (p: "${p}/bin") ps);
        platforms.unix = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];
      };
      pkgsFor = system: let pkgs = rec {
        inherit lib;
        stdenv.hostPlatform.system = system;
        # As nixpkgs' callPackage: the function's arguments from pkgs,
        # args over them, and .override to call it again with more.
        callPackage = f: args:
          let
            fn = import f;
            make = a: fn (builtins.intersectAttrs (builtins.functionArgs fn) pkgs // a) // { override = more: make (a // more); };
          in make args;
        stub = name: derivation { inherit name system; builder = "/bin/sh"; args = [ "-c" "echo > $out" ]; };
        coreutils = stub "coreutils";
        git = stub "git"; deno = stub "deno"; bun = stub "bun"; nodejs = stub "nodejs";
        makeWrapper = stub "make-wrapper";
        writeText = name: text: builtins.toFile name text;
        buildGoModule = a:
          assert builtins.isString a.vendorHash && builtins.substring 0 7 a.vendorHash == "sha256-";
          (derivation {
            name = "${a.pname}-${a.version}";
            inherit system;
            builder = "/bin/sh";
            args = [ "-c" "echo > $out" ];
            src = a.src;
            vendorHash = a.vendorHash;
            subPackages = a.subPackages;
            postInstall = a.postInstall or "";
          }) // { meta = a.meta; } // (a.passthru or { });
      }; in pkgs;
    in
    {
      inherit lib;
      legacyPackages = lib.genAttrs lib.platforms.unix pkgsFor;
    };
}

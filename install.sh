#!/bin/sh
# Install mcpx for this user: the binary, then the user service.
#
#   curl -fsSL https://mcpx.dev/install.sh | sh
#   sh install.sh [--version V] [--from go|archive] [--archive URL|FILE]
#                 [--bin-dir DIR] [--no-service]
#
# It detects the platform (Linux or macOS, amd64 or arm64), installs the
# binary into --bin-dir (default ~/.local/bin) either with `go install
# mcpx.dev/mcpx/cmd/mcpx@V` (--from go; the default when go is on PATH) or
# from a release archive (--from archive: mcpx_<os>_<arch>.tar.gz under
# $MCPX_RELEASE_URL, or the --archive you name, checked against the
# .sha256 beside it when there is one), then runs `mcpx service install`
# (a systemd user unit or a launchd agent; never sudo: the daemon is
# yours and its children run as you) and prints the next step.
#
# Environment: MCPX_VERSION, MCPX_BIN_DIR, MCPX_RELEASE_URL and
# MCPX_INSTALL_FROM give the same defaults as the flags.
set -eu

version="${MCPX_VERSION:-latest}"
from="${MCPX_INSTALL_FROM:-}"
archive=""
bin_dir="${MCPX_BIN_DIR:-${HOME:?HOME is not set}/.local/bin}"
release_url="${MCPX_RELEASE_URL:-https://mcpx.dev/releases}"
service=1

say() { printf 'mcpx install: %s\n' "$*"; }
die() {
	printf 'mcpx install: %s\n' "$*" >&2
	exit 1
}

usage() {
	sed -n '2,18s/^# \{0,1\}//p' "$0" 2>/dev/null || true
	exit "$1"
}

while [ $# -gt 0 ]; do
	case "$1" in
	--version) [ $# -ge 2 ] || die "--version needs a value"; version="$2"; shift 2 ;;
	--from) [ $# -ge 2 ] || die "--from needs go or archive"; from="$2"; shift 2 ;;
	--archive) [ $# -ge 2 ] || die "--archive needs a URL or a file"; archive="$2"; from=archive; shift 2 ;;
	--bin-dir) [ $# -ge 2 ] || die "--bin-dir needs a directory"; bin_dir="$2"; shift 2 ;;
	--no-service) service=0; shift ;;
	-h | --help) usage 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done

# platform sets os and arch as Go names them.
platform() {
	case "$(uname -s)" in
	Linux) os=linux ;;
	Darwin) os=darwin ;;
	*) die "$(uname -s) is not supported: mcpx runs on Linux and macOS" ;;
	esac
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) die "the $(uname -m) processor is not supported: mcpx is built for amd64 and arm64" ;;
	esac
}

# fetch URL FILE copies URL (or a local path) to FILE.
fetch() {
	case "$1" in
	http://* | https://*)
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL -o "$2" "$1"
		elif command -v wget >/dev/null 2>&1; then
			wget -q -O "$2" "$1"
		else
			die "neither curl nor wget is installed to download $1"
		fi
		;;
	file://*) cp "${1#file://}" "$2" ;;
	*) cp "$1" "$2" ;;
	esac
}

# sha256 FILE prints FILE's sha256.
sha256() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

install_go() {
	command -v go >/dev/null 2>&1 || die "go is not on PATH: install Go (https://go.dev/dl) or use --from archive"
	say "go install mcpx.dev/mcpx/cmd/mcpx@$version into $bin_dir"
	GOBIN="$bin_dir" go install "mcpx.dev/mcpx/cmd/mcpx@$version"
}

install_archive() {
	if [ -z "$archive" ]; then
		archive="$release_url/$version/mcpx_${os}_${arch}.tar.gz"
	fi
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	say "fetching $archive"
	fetch "$archive" "$tmp/mcpx.tar.gz" || die "cannot fetch $archive"
	if fetch "$archive.sha256" "$tmp/mcpx.tar.gz.sha256" 2>/dev/null; then
		want="$(cut -d' ' -f1 <"$tmp/mcpx.tar.gz.sha256")"
		got="$(sha256 "$tmp/mcpx.tar.gz")"
		[ "$want" = "$got" ] || die "$archive has sha256 $got, but $archive.sha256 says $want: not installed"
		say "sha256 checked"
	else
		say "no $archive.sha256 to check the archive against"
	fi
	tar -xzf "$tmp/mcpx.tar.gz" -C "$tmp" || die "$archive is not a gzipped tar archive"
	bin="$(find "$tmp" -type f -name mcpx | head -n 1)"
	[ -n "$bin" ] || die "$archive holds no file named mcpx"
	cp "$bin" "$bin_dir/mcpx.new"
	chmod 0755 "$bin_dir/mcpx.new"
	mv -f "$bin_dir/mcpx.new" "$bin_dir/mcpx" # a running daemon keeps its old file
}

platform
mkdir -p "$bin_dir"
if [ -z "$from" ]; then
	if command -v go >/dev/null 2>&1; then from=go; else from=archive; fi
fi
case "$from" in
go) install_go ;;
archive) install_archive ;;
*) die "--from $from: use go or archive" ;;
esac
mcpx="$bin_dir/mcpx"
"$mcpx" help >/dev/null 2>&1 || die "$mcpx does not run on this machine ($os/$arch)"
say "installed $mcpx"

if [ "$service" = 1 ]; then
	say "installing the user service"
	"$mcpx" service install --binary "$mcpx" || die "mcpx service install failed; run it again once fixed, or use --no-service"
fi

case ":${PATH:-}:" in
*":$bin_dir:"*) next="mcpx" ;;
*)
	next="$mcpx"
	say "$bin_dir is not on your PATH: add it (export PATH=\"$bin_dir:\$PATH\" in your shell's profile)"
	;;
esac
if [ "$service" = 1 ]; then
	say "next: $next status, then wire it into your agent: $next install <client> (see $next install --help)"
else
	say "next: $next service install (or $next serve), then $next install <client>"
fi

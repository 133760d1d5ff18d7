# Homebrew formula for mcpx, built from the Go module's source as the Go
# module proxy serves it (no repository URL needed). A release fills in
# VERSION and the zip's sha256:
#
#   curl -fsSLO https://proxy.golang.org/mcpx.dev/mcpx/@v/vVERSION.zip
#   shasum -a 256 vVERSION.zip
#
# Install it from a tap (brew tap OWNER/mcpx && brew install mcpx), then run
# the daemon as your service: `brew services start mcpx` (a launchd agent
# running `mcpx serve`), or `mcpx service install`, which writes the same
# agent with mcpx's own settings. Never sudo: the daemon is yours.
class Mcpx < Formula
  desc "Broker for MCP servers: one daemon, scoped pooled children, many callers"
  homepage "https://mcpx.dev"
  url "https://proxy.golang.org/mcpx.dev/mcpx/@v/v0.1.0.zip"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"

  depends_on "go" => :build
  # The runtime set scripts and servers find on the service's PATH (the
  # Nix package wraps git, deno, bun and node the same way).
  depends_on "git"
  depends_on "node"

  def install
    # The proxy's zip holds mcpx.dev/mcpx@vX/: build from there.
    cd Dir["mcpx@*"].first || "." do
      ENV["CGO_ENABLED"] = "0"
      system "go", "build", *std_go_args(ldflags: "-s -w"), "./cmd/mcpx"
    end
  end

  service do
    run [opt_bin/"mcpx", "serve"]
    environment_variables PATH: std_service_path_env
    keep_alive crashed: true
    log_path var/"log/mcpx.log"
    error_log_path var/"log/mcpx.log"
  end

  test do
    assert_match "mcpx", shell_output("#{bin}/mcpx help")
  end
end

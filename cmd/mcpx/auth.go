package main

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"mcpx.dev/mcpx/client"
	"mcpx.dev/mcpx/mcp/oauth"
	"mcpx.dev/mcpx/wire"
)

// authCmd is `mcpx auth login|status|logout`: signing in to url servers
// (docs/oauth.md). login runs its loopback listener and the browser on
// this machine, whichever daemon --broker names.
func authCmd(ctx context.Context, c *cli, args []string) int {
	fs := newFlags(c, "auth")
	brokerAddr := brokerFlag(fs)
	asJSON := fs.Bool("json", false, "status: print the daemon's answer as JSON")
	noBrowser := fs.Bool("no-browser", false, "login: print the authorization URL instead of opening a browser")
	port := fs.Int("port", 0, "login: the loopback port the browser is sent back to (default: any free one); client-metadata: also list this port's redirect URI")
	serveAddr := fs.String("serve", "", "client-metadata: serve the document at its URL's path on this address (behind the proxy that publishes it) until interrupted")
	ap := addApproveFlags(fs)
	pos, code, ok := parseFlags(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 2 && (pos[0] == "login" || pos[0] == "logout"):
	case len(pos) == 1 && pos[0] == "status":
	case len(pos) == 2 && pos[0] == "client-metadata":
		return clientMetadata(ctx, c, pos[1], *port, *serveAddr)
	case len(pos) == 2 && pos[0] == "approve":
		return ap.run(ctx, c, brokerAddr, pos[1], *asJSON)
	default:
		return usageError(c, fs, "want `login <server>`, `status`, `logout <server>`, `client-metadata <url>` or `approve <code>`")
	}
	bc, err := newBrokerClient(ctx, c, brokerAddr)
	if err != nil {
		return report(c, err)
	}
	switch pos[0] {
	case "login":
		err = authLogin(ctx, c, bc, pos[1], *port, *noBrowser)
	case "logout":
		var out *wire.AuthLogout
		if out, err = bc.AuthLogout(ctx, pos[1]); err == nil {
			how := "the server offers no revocation, or refused it"
			if out.Revoked {
				how = "its tokens revoked at the server"
			}
			fmt.Fprintf(c.stdout, "signed out of %s (%s)\n", out.Server, how)
		}
	case "status":
		var l *wire.AuthStatusList
		var raw []byte
		if l, raw, err = bc.AuthStatus(ctx); err == nil {
			if *asJSON {
				fmt.Fprintf(c.stdout, "%s\n", strings.TrimRight(string(raw), "\n"))
			} else {
				printAuthStatus(c, l)
			}
		}
	}
	if err != nil {
		return report(c, err)
	}
	return exitOK
}

// clientMetadata prints mcpx's Client ID Metadata Document for the URL
// the owner publishes it at, or serves it there (docs/oauth.md).
func clientMetadata(ctx context.Context, c *cli, u string, port int, serveAddr string) int {
	m, err := oauth.NewClientMetadata(u, "", port)
	if err != nil {
		fmt.Fprintf(c.stderr, "mcpx auth client-metadata: %v\n", err)
		return exitUsage
	}
	doc := m.JSON()
	if serveAddr == "" {
		c.stdout.Write(doc)
		return exitOK
	}
	ln, err := net.Listen("tcp", serveAddr)
	if err != nil {
		return report(c, fmt.Errorf("--serve: %w", err))
	}
	parsed, _ := url.Parse(u) // checked by NewClientMetadata
	path := parsed.Path
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=3600")
		w.Write(doc)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(c.stderr, "serving the client metadata document of %s at http://%s%s\n", u, ln.Addr(), path)
	go func() { <-ctx.Done(); srv.Close() }()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		return report(c, err)
	}
	return exitOK
}

// callback is what the browser brought back to the loopback listener.
type callback struct {
	status *wire.AuthStatus
	err    error
}

// authLogin signs in to server: a loopback listener here, the daemon's
// authorization URL opened in the browser (or printed), and the answer
// handed to the daemon.
func authLogin(ctx context.Context, c *cli, bc *client.Client, server string, port int, noBrowser bool) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listening for the browser on 127.0.0.1:%d: %w", port, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	login, err := bc.AuthLogin(ctx, server, redirect)
	if err != nil {
		return err
	}
	done := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(ctx, bc, server, login.State, done), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Shutdown below
	defer srv.Shutdown(context.Background())

	fmt.Fprintf(c.stderr, "sign in to %s at:\n  %s\n", server, login.AuthorizationURL)
	var opened *exec.Cmd
	if !noBrowser {
		if opened, err = openBrowser(c, login.AuthorizationURL); err != nil {
			fmt.Fprintf(c.stderr, "mcpx: could not open a browser (%v): open the URL above\n", err)
		}
	}
	if opened != nil {
		defer waitBrowser(opened)
	}
	wait, cancel := context.WithDeadline(ctx, login.Expires)
	defer cancel()
	select {
	case cb := <-done:
		if cb.err != nil {
			return cb.err
		}
		st := cb.status
		fmt.Fprintf(c.stdout, "signed in to %s (issuer %s; scopes %s; %s)\n", st.Server, st.Issuer,
			orNone(strings.Join(st.Scopes, " ")), expiryText(st))
		return nil
	case <-wait.Done():
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("no answer from the browser before the sign-in expired: run `mcpx auth login %s` again", server)
	}
}

// callbackHandler answers the browser's redirect: the authorization
// response goes to the daemon, the outcome to the browser and to done.
// A request whose state is not ours is refused and waited past.
func callbackHandler(ctx context.Context, bc *client.Client, server, state string, done chan<- callback) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("state") != state {
			http.Error(w, "this is not the sign-in mcpx is waiting for", http.StatusBadRequest)
			return
		}
		var cb callback
		if e := q.Get("error"); e != "" {
			cb.err = fmt.Errorf("the authorization server refused the sign-in: %s %s", e, q.Get("error_description"))
		} else {
			cb.status, cb.err = bc.AuthCallback(ctx, server, wire.AuthCallback{State: q.Get("state"), Code: q.Get("code"), Iss: q.Get("iss")})
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if cb.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<p>Signing in to %s failed: %s</p>", html.EscapeString(server), html.EscapeString(cb.err.Error()))
		} else {
			fmt.Fprintf(w, "<p>Signed in to %s. You may close this tab.</p>", html.EscapeString(server))
		}
		select {
		case done <- cb:
		default:
		}
	})
	return mux
}

// openBrowser opens u with $BROWSER (its first entry; %s is the URL), else
// the platform's opener.
func openBrowser(c *cli, u string) (*exec.Cmd, error) {
	var argv []string
	if b := strings.TrimSpace(strings.Split(c.getenv("BROWSER"), ":")[0]); b != "" {
		argv = strings.Fields(b)
		if i := slices.Index(argv, "%s"); i >= 0 {
			argv[i] = u
		} else {
			argv = append(argv, u)
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			argv = []string{"open", u}
		case "windows":
			argv = []string{"rundll32", "url.dll,FileProtocolHandler", u}
		default:
			argv = []string{"xdg-open", u}
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// waitBrowser reaps the opener, giving it a few seconds: a real browser
// may outlive the sign-in (it is then left to run).
func waitBrowser(cmd *exec.Cmd) {
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // its status says nothing of the sign-in
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func expiryText(st *wire.AuthStatus) string {
	s := "no expiry said"
	if !st.Expiry.IsZero() {
		s = "expires " + st.Expiry.Local().Format(time.RFC3339)
	}
	if st.Refresh {
		s += ", refreshed automatically"
	}
	return s
}

func printAuthStatus(c *cli, l *wire.AuthStatusList) {
	if len(l.Servers) == 0 {
		fmt.Fprintln(c.stdout, "no url servers")
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSTATE\tISSUER\tEXPIRES\tREFRESH\tSCOPES")
	for _, s := range l.Servers {
		state := "not signed in"
		switch {
		case s.NeedsSignIn:
			state = "needs sign-in: " + s.Reason
		case s.SignedIn:
			state = "signed in"
		}
		expires := "-"
		if !s.Expiry.IsZero() {
			expires = s.Expiry.Local().Format(time.RFC3339)
		}
		server := s.Server
		if s.Caller != "" {
			server += " (" + s.Caller + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", server, state, orDash(s.Issuer), expires, yesNo(s.Refresh), orDash(strings.Join(s.Scopes, " ")))
	}
	tw.Flush()
}

package broker

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// Sign-in where the person is (docs/oauth.md, "Signing in from the MCP
// client"): a call that needs sign-in, from an MCP client that declared
// URL-mode elicitation, asks that client to open the authorization URL;
// the browser comes back to the daemon's own loopback listener
// (AuthRedirect), and the call goes on once the sign-in lands, or fails
// with authorization-required as it would have.

// signInWait bounds how long a call waits for the sign-in its caller was
// asked to make.
const signInWait = 5 * time.Minute

// SetSignInRedirect names the URL a browser is sent back to after signing
// in at a server's authorization server for a caller asked by URL-mode
// elicitation: the daemon's loopback listener's redirect route
// (http://127.0.0.1:<port>/v1/auth/redirect). "" = callers are not asked:
// their calls fail with authorization-required at once.
func (b *Broker) SetSignInRedirect(u string) { b.signIn.redirect.Store(&u) }

// signIns is what the broker keeps of the sign-ins its callers were asked
// to make.
type signIns struct {
	redirect atomic.Pointer[string]
	mu       sync.Mutex
	waits    map[string]chan struct{} // guarded by mu; by server and account, closed at their next sign-in
}

func (s *signIns) redirectURI() string {
	if p := s.redirect.Load(); p != nil {
		return *p
	}
	return ""
}

// wait returns a channel closed at server's next sign-in for account.
func (s *signIns) wait(server, account string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waits == nil {
		s.waits = map[string]chan struct{}{}
	}
	k := server + "\x00" + account
	if s.waits[k] == nil {
		s.waits[k] = make(chan struct{})
	}
	return s.waits[k]
}

// done wakes the calls waiting for server's sign-in for account.
func (s *signIns) done(server, account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := server + "\x00" + account
	if ch := s.waits[k]; ch != nil {
		close(ch)
		delete(s.waits, k)
	}
}

type signInAskKey struct{}

// withSignInAsk returns ctx carrying r's input handler for sign-ins, if
// r's caller declared URL-mode elicitation (an MCP client's
// capabilities).
func withSignInAsk(ctx context.Context, r Request) context.Context {
	if r.OnInput == nil || r.Capabilities == nil || r.Capabilities.Elicitation == nil {
		return ctx
	}
	var caps struct {
		URL json.RawMessage `json:"url"`
	}
	if json.Unmarshal(r.Capabilities.Elicitation, &caps) != nil || caps.URL == nil {
		return ctx
	}
	return context.WithValue(ctx, signInAskKey{}, r.OnInput)
}

// askSignIn asks the caller of ctx, if it can be asked, to sign in to
// server (account's sign-in) by opening the authorization URL, and waits
// for the sign-in: true once it landed. False, at once, for a caller that
// cannot be asked (no URL-mode elicitation, no loopback listener to come
// back to) or declines; false after signInWait or when ctx ends.
func (b *Broker) askSignIn(ctx context.Context, server, account string) bool {
	ask, _ := ctx.Value(signInAskKey{}).(InputHandler)
	redirect := b.signIn.redirectURI()
	if ask == nil || redirect == "" {
		return false
	}
	l, err := b.oauth.Begin(ctx, server, account, redirect)
	if err != nil {
		b.log.Info("sign-in: cannot ask the caller to sign in", "server", server, "err", err)
		return false
	}
	params, _ := json.Marshal(map[string]string{"mode": "url", "elicitationId": rand.Text(), "url": l.URL,
		"message": fmt.Sprintf("Sign in to %s to go on: open the link; the call continues once you have signed in.", server)})
	landed := b.signIn.wait(server, account)
	res, err := ask(ctx, InputRequest{Method: jsonrpc.MethodElicit, Params: params})
	var answer struct {
		Action string `json:"action"`
	}
	if err != nil || json.Unmarshal(res, &answer) != nil || answer.Action != "accept" {
		b.log.Info("sign-in: the caller did not take the sign-in link", "server", server, "action", answer.Action, "err", err)
		return false
	}
	t := time.NewTimer(signInWait)
	defer t.Stop()
	select {
	case <-landed:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// retrySignedIn runs try, and once more if it failed for want of a sign-in
// its caller was asked for and made (askSignIn).
func (b *Broker) retrySignedIn(ctx context.Context, server, account string, try func() error) error {
	err := try()
	var be *Error
	if !errors.As(err, &be) || be.Kind != KindAuthorizationRequired || !b.askSignIn(ctx, server, account) {
		return err
	}
	return try()
}

// AuthRedirect completes the sign-in a browser comes back from to the
// daemon's own redirect route (SetSignInRedirect), named by its state
// alone: the authorization response's code, state and iss, or the
// authorization server's error. The state is the one capability: it was
// given only in the authorization URL of the caller who was asked.
func (b *Broker) AuthRedirect(ctx context.Context, state, code, iss, errCode string) (AuthStatus, error) {
	server, account, ok := b.oauth.Pending(state)
	if !ok {
		return AuthStatus{}, &Error{Kind: KindBadRequest, Op: "sign in", Field: "state",
			Msg:  "no sign-in is waiting for this answer (its state is unknown or expired)",
			Hint: "call the tool again for a new sign-in link, or run `mcpx auth login <server>`"}
	}
	if errCode != "" {
		return AuthStatus{}, &Error{Kind: KindBadRequest, Op: "sign in", Server: server,
			Msg: "the authorization server answered " + errCode + " instead of a code"}
	}
	return b.completeSignIn(ctx, server, account, state, code, iss)
}

// completeSignIn completes account's sign-in to server, renews the
// instances that use it, and wakes the calls waiting for it.
func (b *Broker) completeSignIn(ctx context.Context, server, account, state, code, iss string) (AuthStatus, error) {
	st, err := b.oauth.Complete(ctx, server, account, state, code, iss)
	if err != nil {
		return AuthStatus{}, &Error{Kind: KindBadRequest, Op: "sign in", Server: server, Msg: err.Error(), Err: err}
	}
	// Starts that failed for want of a sign-in are not a crash loop: the
	// next call starts afresh, with the new tokens (pool.Restart forgets
	// the backoff). Only the instances of this sign-in: another caller's
	// session of a perCaller server is not theirs to renew.
	b.pool.RestartAccount(servedAs(server), account, "signed in")
	b.signIn.done(server, account)
	return authStatus(st), nil
}

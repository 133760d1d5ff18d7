package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"mcpx.dev/mcpx/wire"
)

// AcquireLease acquires a lease for ttl (0 = the daemon's default, 60s).
// Send its ID as Caller.Lease; renew it before Expires; release it when done.
func (c *Client) AcquireLease(ctx context.Context, ttl time.Duration) (*wire.Lease, error) {
	return sendJSON[wire.Lease](ctx, c, wire.OpAcquireLease, leaseRequest(ttl))
}

// RenewLease extends lease id by ttl (0 = its own ttl).
func (c *Client) RenewLease(ctx context.Context, id string, ttl time.Duration) (*wire.Lease, error) {
	return sendJSON[wire.Lease](ctx, c, wire.OpRenewLease, leaseRequest(ttl), id)
}

func leaseRequest(ttl time.Duration) wire.LeaseRequest {
	if ttl == 0 {
		return wire.LeaseRequest{}
	}
	return wire.LeaseRequest{TTL: ttl.String()}
}

// ReleaseLease ends lease id; the daemon drains and stops its instances
// before it answers.
func (c *Client) ReleaseLease(ctx context.Context, id string) error {
	resp, err := c.send(ctx, wire.OpReleaseLease, nil, nil, nil, "", id)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// Sessions lists the caller's sessions (an admin's: everyone's).
func (c *Client) Sessions(ctx context.Context) (*wire.SessionList, []byte, error) {
	return get[wire.SessionList](ctx, c, wire.OpListSessions, nil, "")
}

// Session describes a session, by its key or its name (a name several
// sessions share is an error: use the key).
func (c *Client) Session(ctx context.Context, key string) (*wire.Session, []byte, error) {
	return get[wire.Session](ctx, c, wire.OpGetSession, nil, "", key)
}

// StopSession drains and stops the instances of a session, by its key or
// its name.
func (c *Client) StopSession(ctx context.Context, key string) error {
	resp, err := c.send(ctx, wire.OpStopSession, nil, nil, nil, "", key)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// SetSession names a session (by its key or its present name) or sets its
// idle timeout.
func (c *Client) SetSession(ctx context.Context, key string, patch wire.SessionPatch) (*wire.Session, error) {
	return sendJSON[wire.Session](ctx, c, wire.OpSetSession, patch, key)
}

// sendJSON makes op's request with body encoded as JSON and decodes the
// JSON document it answers.
func sendJSON[T any](ctx context.Context, c *Client, op string, body any, params ...string) (*T, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	resp, err := c.send(ctx, op, nil, b, nil, "", params...)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the broker's answer: %w", err)
	}
	doc := new(T)
	if err := json.Unmarshal(raw, doc); err != nil {
		return nil, fmt.Errorf("decoding the broker's answer: %w", err)
	}
	return doc, nil
}

package api

import (
	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// limitMembers gives the problem of a rate-limited call (429) the limit
// that refused it and when to retry (also the Retry-After header).
func limitMembers(p *wire.Problem, e *broker.Error) {
	if e.Kind != broker.KindRateLimited {
		return
	}
	p.RetryAfter = retryAfterSeconds(e.RetryAfter)
	if e.Limit != nil {
		p.Limit = &wire.ProblemLimit{Kind: string(e.Limit.Kind), Value: e.Limit.Value}
	}
}

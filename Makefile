# `make test` is the README's test command: install what the tests need
# (idempotent), then run the whole suite with missing dependencies as failures.
.PHONY: test deps
test: deps
	MCPX_REQUIRE_DEPS=1 go test ./... -race -count=1 -timeout 20m

deps:
	bash .ci/run deps

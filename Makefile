# `make test` is the README's test command: install what the tests need
# (idempotent), then run the whole suite with missing dependencies as failures.
# GORACE: the race-built test binaries that tests re-exec as children would
# otherwise each sleep 1 s at exit.
.PHONY: test deps
test: deps
	MCPX_REQUIRE_DEPS=1 GORACE=atexit_sleep_ms=0 go test ./... -race -count=1 -timeout 20m

deps:
	bash .ci/run deps

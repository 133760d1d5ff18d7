# `make test` is the README's test command: install what the tests need
# (idempotent), check the module is tidy and vetted, then run the whole suite
# with missing dependencies as failures.
# GORACE: the race-built test binaries that tests re-exec as children would
# otherwise each sleep 1 s at exit.
.PHONY: test deps lint faults
test: deps lint
	MCPX_REQUIRE_DEPS=1 GORACE=atexit_sleep_ms=0 go test ./... -race -count=1 -timeout 20m

deps:
	bash .ci/run deps

# lint fails on an untidy go.mod (a direct dependency marked indirect, a
# missing or stale requirement), on go vet findings, and on staticcheck's
# default checks (staticcheck is installed by deps, pinned in .ci/run).
lint:
	go mod tidy -diff
	go vet ./...
	staticcheck ./...

# faults runs only the fault suite (hostile callers, misbehaving children,
# process leaks: every TestFault… test); `make test` runs it too.
faults: deps
	MCPX_REQUIRE_DEPS=1 GORACE=atexit_sleep_ms=0 go test ./... -race -count=1 -run Fault -timeout 10m

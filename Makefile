# `make test` is the README's test command: install what the tests need
# (idempotent), check the module is tidy and vetted, then run the whole suite
# with missing dependencies as failures.
# GORACE: the race-built test binaries that tests re-exec as children would
# otherwise each sleep 1 s at exit.
.PHONY: test deps lint faults fuzz
test: deps lint
	@echo "make test: go test starts at $$(date -u +%T)"
	MCPX_REQUIRE_DEPS=1 GORACE=atexit_sleep_ms=0 go test ./... -race -count=1 -timeout 20m

deps:
	bash .ci/run deps

# lint fails on an untidy go.mod (a direct dependency marked indirect, a
# missing or stale requirement), on go vet findings, and on staticcheck's
# default checks (staticcheck is installed by deps, pinned in .ci/run).
# Both look at the race build (GOFLAGS=-race), the one the tests compile:
# the packages they compile for it are the tests' too. Without it lint
# compiled the module and its dependencies once more for itself, about a
# third of a fresh machine's `make test` (328 of 1665 s, 2026-12-07); what
# it gives up is pool/proc/env_norace.go, one empty variable.
lint:
	@echo "make lint: starts at $$(date -u +%T)"
	go mod tidy -diff
	GOFLAGS="$$GOFLAGS -race" go vet ./...
	GOFLAGS="$$GOFLAGS -race" staticcheck ./...

# faults runs only the fault suite (hostile callers, misbehaving children,
# process leaks: every TestFault… test); `make test` runs it too.
faults: deps
	MCPX_REQUIRE_DEPS=1 GORACE=atexit_sleep_ms=0 go test ./... -race -count=1 -run Fault -timeout 10m

# fuzz runs every fuzz target (each package's func Fuzz…) for FUZZTIME on
# top of its seed corpus (the f.Add seeds and testdata/fuzz/<Target>/);
# `make test` runs the seeds alone, as plain tests. A failing input is
# written to testdata/fuzz/<Target>/: commit it with the fix.
# FUZZTIME is a count of inputs (Nx), not a duration: Go 1.26's fuzz
# coordinator can fail a target with a bare "context deadline exceeded"
# when a duration runs out while a worker is busy (go.dev/issue/75804, fixed
# in Go 1.27); a count sets no deadline. CI runs 10000x (.ci/run says
# why); the default is fifty times that.
FUZZTIME ?= 500000x
fuzz:
	@set -e; grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . | sort | while IFS=: read -r file decl; do \
		dir=$$(dirname "$$file"); name=$${decl#func }; \
		echo "go test -run '^$$' -fuzz '^$$name$$' -fuzztime $(FUZZTIME) $$dir"; \
		go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) "$$dir" </dev/null; \
	done

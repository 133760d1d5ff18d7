// Package deploy will hold the service definitions mcpx installs (a systemd
// user unit, a launchd agent) as embedded templates for `mcpx service install`.
//
// TODO(2026-11-30, issue 13 "Deploy it and run a fleet"): not built yet. The
// package exists now so that its dependency rules bind from its first line.
package deploy

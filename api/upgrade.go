package api

import (
	"net/http"

	"mcpx.dev/mcpx/wire"
)

// upgradeDaemon is POST /v1/daemon/upgrade: the daemon checks the binary,
// answers, then drains and re-executes itself (daemon.Upgrader). The
// caller learns the outcome from /v1/whoami's generation.
func (s *server) upgradeDaemon(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkControl(r, "upgrade the daemon"); err != nil {
		return err
	}
	if s.daemon.Upgrade == nil {
		return noControl("upgrade the daemon")
	}
	res, err := s.daemon.Upgrade(r.URL.Query().Get(wire.QueryBinary))
	if err != nil {
		return err
	}
	s.log.Info("upgrade requested through the API", "binary", res.Binary, "generation", res.Generation)
	writeJSON(w, http.StatusOK, res)
	return nil
}

package api

import (
	"net/http"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// configSources is GET /v1/config/sources (broker.ConfigSources).
func (s *server) configSources(w http.ResponseWriter, r *http.Request) error {
	req, err := request(r)
	if err != nil {
		return err
	}
	src, err := s.b.ConfigSources(req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sourcesDoc(src))
	return nil
}

// sourcesDoc is src as GET /v1/config/sources answers it.
func sourcesDoc(src broker.Sources) wire.ConfigSources {
	out := wire.ConfigSources{Cwd: src.Cwd, ProjectConfig: src.ProjectConfig, Warnings: src.Warnings,
		Chain: make([]wire.ChainDir, 0, len(src.Chain)), Servers: make([]wire.ServerSource, 0, len(src.Servers))}
	for _, d := range src.Chain {
		out.Chain = append(out.Chain, wire.ChainDir{Kind: string(d.Kind), Path: d.Path, Config: d.Config,
			Scripts: d.Scripts, Lib: d.Lib, Applied: d.Applied, Skipped: d.Skipped})
	}
	for _, sv := range src.Servers {
		out.Servers = append(out.Servers, serverSourceDoc(sv))
	}
	return out
}

func serverSourceDoc(sv broker.ServerSource) wire.ServerSource {
	return wire.ServerSource{Name: sv.Name, File: sv.File, Kind: string(sv.Kind), Overrides: sv.Overrides,
		DisabledBy: sv.DisabledBy, Instance: sv.Instance}
}

package api

import (
	"fmt"
	"net/http"

	"mcpx.dev/mcpx/wire"
)

// handlerFunc serves one operation. Handlers return an error instead of
// writing one, so every failure goes through writeProblem.
type handlerFunc func(s *server, w http.ResponseWriter, r *http.Request) error

// handlers serves each operation of wire's route table, by operation name.
// The router mounts wire.Routes() through this map: a route without a
// handler, or a handler without a route, fails TestHandlersMatchRoutes (and
// New, for a route without a handler).
var handlers = map[string]handlerFunc{
	wire.OpHealthz:               (*server).healthz,
	wire.OpAuthRedirect:          (*server).authRedirect,
	wire.OpWhoami:                (*server).whoami,
	wire.OpListServers:           (*server).listServers,
	wire.OpGetServer:             (*server).getServer,
	wire.OpListServerTools:       (*server).listServerTools,
	wire.OpGetSandbox:            (*server).getSandbox,
	wire.OpCallTool:              (*server).callTool,
	wire.OpListResources:         (*server).listResources,
	wire.OpReadResource:          (*server).readResource,
	wire.OpListPrompts:           (*server).listPrompts,
	wire.OpGetPrompt:             (*server).getPrompt,
	wire.OpListTools:             (*server).listTools,
	wire.OpListInstances:         (*server).listInstances,
	wire.OpStopInstance:          (*server).stopInstance,
	wire.OpStopDaemon:            (*server).stopDaemon,
	wire.OpReloadDaemon:          (*server).reloadDaemon,
	wire.OpRestartServer:         (*server).restartServer,
	wire.OpAuthLogin:             (*server).authLogin,
	wire.OpAuthCallback:          (*server).authCallback,
	wire.OpAuthStatus:            (*server).authStatus,
	wire.OpAuthLogout:            (*server).authLogout,
	wire.OpRefresh:               (*server).refresh,
	wire.OpUpgradeDaemon:         (*server).upgradeDaemon,
	wire.OpOpenAPI:               (*server).openAPI,
	wire.OpTypeScript:            (*server).typeScriptClient,
	wire.OpTypes:                 (*server).types,
	wire.OpServerOpenAPI:         (*server).serverOpenAPI,
	wire.OpToolsOpenAPI:          (*server).toolsOpenAPI,
	wire.OpCatalog:               (*server).catalog,
	wire.OpConfigSources:         (*server).configSources,
	wire.OpListNix:               (*server).listNix,
	wire.OpEvents:                (*server).streamEvents,
	wire.OpRefreshNix:            (*server).refreshNix,
	wire.OpGCNix:                 (*server).gcNix,
	wire.OpAcquireLease:          (*server).acquireLease,
	wire.OpRenewLease:            (*server).renewLease,
	wire.OpReleaseLease:          (*server).releaseLease,
	wire.OpListSessions:          (*server).listSessions,
	wire.OpGetSession:            (*server).getSession,
	wire.OpStopSession:           (*server).stopSession,
	wire.OpSetSession:            (*server).setSession,
	wire.OpCallStats:             (*server).callStats,
	wire.OpListTokens:            (*server).listTokens,
	wire.OpMintToken:             (*server).mintToken,
	wire.OpRevokeToken:           (*server).revokeToken,
	wire.OpRotateKey:             (*server).rotateTokenKey,
	wire.OpApprovePublic:         (*server).approvePublic,
	wire.OpListPublicClients:     (*server).listPublicClients,
	wire.OpRevokePublic:          (*server).revokePublic,
	wire.OpAnswerInput:           (*server).answerInput,
	wire.OpMetrics:               (*server).getMetrics,
	wire.OpLog:                   (*server).streamLog,
	wire.OpFleet:                 (*server).getFleet,
	wire.OpFleetSD:               (*server).getFleetSD,
	wire.OpTailnet:               (*server).getTailnet,
	wire.OpListTasks:             (*server).listTasks,
	wire.OpGetTask:               (*server).getTask,
	wire.OpTaskResult:            (*server).taskResult,
	wire.OpCancelTask:            (*server).cancelTask,
	wire.OpListResourceTemplates: (*server).listResourceTemplates,
	wire.OpComplete:              (*server).complete,
	wire.OpSetLogLevel:           (*server).setLogLevel,
	wire.OpListPins:              (*server).listPins,
	wire.OpApproveTools:          (*server).approveTools,
	wire.OpCallFeed:              (*server).streamCalls,
}

// route is a wire route with its handler.
type route struct {
	wire.Route
	handle handlerFunc
}

// routes pairs every wire route with its handler. It panics if one has
// none: the table and the handlers are both compiled in, so that is a bug.
func routes() []route {
	var out []route
	for _, rt := range wire.Routes() {
		h, ok := handlers[rt.Name]
		if !ok {
			panic(fmt.Sprintf("api: no handler for route %s (%s %s)", rt.Name, rt.Method, rt.Pattern))
		}
		out = append(out, route{rt, h})
	}
	return out
}

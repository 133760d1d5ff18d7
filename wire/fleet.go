package wire

// Operation names of the fleet and tailnet routes.
const (
	OpFleet   = "getFleet"
	OpFleetSD = "getFleetSD"
	OpTailnet = "getTailnet"
)

// Query parameters of GET /v1/fleet.
const (
	// QueryTag selects the brokers among the tailnet's peers by a tag
	// ("tag:mcpx"); absent = DefaultFleetTag.
	QueryTag = "tag"
	// QueryProbe, "true", selects the brokers by asking every peer's :80
	// /healthz instead of by tag.
	QueryProbe = "probe"
	// QueryTimeout bounds the questions to each broker (a Go duration,
	// 100ms to 30s); absent = the daemon's (2s).
	QueryTimeout = "timeout"
)

// DefaultFleetTag is the tag that marks a tailnet node as an mcpx broker
// (`mcpx serve --tailnet --tailnet-tags tag:mcpx`).
const DefaultFleetTag = "tag:mcpx"

// Fleet states (FleetBroker.State).
const (
	FleetOK          = "ok"          // /healthz and /v1/servers answered
	FleetRefused     = "refused"     // it answered /healthz but refused this caller (no grant)
	FleetUnreachable = "unreachable" // no answer within the probe's time
	FleetError       = "error"       // it answered, but not as an mcpx broker does
)

// Fleet is the GET /v1/fleet document and `mcpx fleet ls --json`: the
// brokers among a tailnet node's peers, each asked in parallel.
type Fleet struct {
	// Node is the MagicDNS name of the node whose view this is: the
	// daemon's, or the CLI's own (--tsnet).
	Node string `json:"node"`
	// Tag is the tag that selected the brokers; "" with Probe.
	Tag string `json:"tag,omitempty"`
	// Probe is true when every peer was asked instead (peers that are not
	// brokers are left out).
	Probe   bool          `json:"probe,omitempty"`
	Brokers []FleetBroker `json:"brokers"`
}

// FleetBroker is one broker of a Fleet, as it answered the asking node:
// what its grant lets that node see.
type FleetBroker struct {
	Name    string   `json:"name"`           // the node's short name: `--broker <name>` drives it
	DNSName string   `json:"dnsName"`        // its MagicDNS name
	IPs     []string `json:"ips"`            // its tailnet addresses
	Tags    []string `json:"tags,omitempty"` // its tailnet tags
	// Online is what the tailnet's control server says of the node; the
	// probe is made either way, and State is what it found.
	Online bool `json:"online"`
	// Self is true for the answering daemon's own entry.
	Self bool `json:"self,omitempty"`
	// State is FleetOK, FleetRefused, FleetUnreachable or FleetError;
	// Error says why when it is not ok.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Version is the broker's, from /healthz.
	Version string `json:"version,omitempty"`
	// Caller is the name the broker gives the asking node (its login or
	// tags), from /v1/whoami.
	Caller string `json:"caller,omitempty"`
	// Servers are the servers the asking node may use there, with their
	// running instances; Instances is their sum.
	Servers   []FleetServer `json:"servers,omitempty"`
	Instances int           `json:"instances"`
}

// FleetTargets is the GET /v1/fleet/sd document: Prometheus HTTP service
// discovery (http_sd_configs), one target group per broker, the
// answering daemon first.
type FleetTargets []FleetTarget

// FleetTarget is one target group of Prometheus HTTP service discovery:
// the broker's API address ("host:port"), and its labels. Labels that
// begin with "__meta_" are there for relabelling and dropped after it;
// the others (SDLabelBroker) become the labels of every series scraped
// from the target.
type FleetTarget struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// The labels of a FleetTarget.
const (
	SDLabelBroker      = "broker"                      // the broker's short name: a label of every series
	SDLabelMetricsPath = "__metrics_path__"            // always /metrics
	SDLabelName        = "__meta_mcpx_broker_name"     // the broker's short name
	SDLabelDNSName     = "__meta_mcpx_broker_dns_name" // its MagicDNS name ("" off a tailnet)
	SDLabelVersion     = "__meta_mcpx_broker_version"  // its version, from /healthz ("" when it did not answer)
	SDLabelState       = "__meta_mcpx_broker_state"    // the FleetBroker.State this daemon found
	SDLabelSelf        = "__meta_mcpx_broker_self"     // "true" for the answering daemon
)

// FleetServer is one server of a FleetBroker.
type FleetServer struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"` // running now
}

// Tailnet node states (TailnetStatus.State).
const (
	TailnetOff              = "off"                // the daemon runs without --tailnet
	TailnetRunning          = "running"            // joined: the API is served on the tailnet
	TailnetStarting         = "starting"           // connecting to the control server
	TailnetNeedsLogin       = "needs-login"        // the node's key expired or was logged out: AuthURL
	TailnetNeedsMachineAuth = "needs-machine-auth" // an administrator must approve the node
	TailnetStopped          = "stopped"            // the node is closed or stopped
)

// TailnetStatus is the GET /v1/tailnet document: the daemon's tailnet node
// as it is now, for `mcpx doctor`.
type TailnetStatus struct {
	State string `json:"state"`
	// AuthURL is the login URL to open when State is TailnetNeedsLogin and
	// the control server gave one.
	AuthURL string `json:"authURL,omitempty"`
	// Node is the node's name and addresses; absent when off.
	Node *NodeInfo `json:"node,omitempty"`
	// Health are the node's health warnings, as tailscale words them.
	Health []string `json:"health,omitempty"`
}

package wire

// OpSubscribeResource is the operation of a resource subscription.
const OpSubscribeResource = "subscribeResource"

// The events of GET /v1/servers/{server}/resources/subscribe?uri= (a
// resource subscription): first StreamSubscribed, once the child accepted
// the subscription (shared with every other caller subscribed to the URI
// on the same instance), then a StreamUpdated for each
// notifications/resources/updated the child sends of the URI (or of a URI
// below it). The stream ends, after a StreamEnd saying why, when the
// server's instance stops (subscribe again to follow the resource on a new
// one) or when the caller's rights end; closing the request unsubscribes.
// Errors found before the subscription (unknown server, no uri, a child
// that refuses to subscribe) are plain problem answers with their status.
// While nothing happens the server sends a KeepAliveComment now and then.
const (
	StreamSubscribed = "subscribed" // data: ResourceUpdated of the subscribed URI; always first
	StreamUpdated    = "updated"    // data: the params of the child's notifications/resources/updated (ResourceUpdated)
)

// ResourceUpdated is the data of a StreamSubscribed and a StreamUpdated:
// the params of the child's notifications/resources/updated (MCP
// server/resources, "Subscriptions"), passed on as the child sent them;
// these are the members the specification defines.
type ResourceUpdated struct {
	URI   string `json:"uri"`             // the resource that changed (or was subscribed to)
	Title string `json:"title,omitempty"` // a title for the resource, if the child gave one
}

//lint:file-ignore SA1019 roots are what mcpx gives every child with a root; the 2026-07-28 revision deprecates them with a twelve-month window, and the broker speaks the handshake eras that use them.

package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Input schemas are written out rather than inferred so that they carry
// descriptions, defaults and bounds, and reject unknown arguments: they are
// also the fixtures for schema-driven code (clientgen, openapi).
func rawSchema(s string) json.RawMessage { return json.RawMessage(s) }

const emptySchema = `{"type":"object","properties":{},"additionalProperties":false}`

const echoSchema = `{"type":"object","properties":{
	"message":{"type":"string","description":"the text to return"}},
	"required":["message"],"additionalProperties":false}`

// DriftEchoSchema is echo's input schema under EnvDrift: a later version
// that also requires "times".
const DriftEchoSchema = `{"type":"object","properties":{
	"message":{"type":"string","description":"the text to return"},
	"times":{"type":"integer","minimum":1}},
	"required":["message","times"],"additionalProperties":false}`

type echoIn struct {
	Message string `json:"message"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
	return text(in.Message), nil, nil
}

const addSchema = `{"type":"object","properties":{
	"a":{"type":"number","description":"first addend"},
	"b":{"type":"number","description":"second addend"}},
	"required":["a","b"],"additionalProperties":false}`

type addIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type addOut struct {
	Sum float64 `json:"sum" jsonschema:"a + b"`
}

func add(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
	sum := in.A + in.B
	return text(strconv.FormatFloat(sum, 'f', -1, 64)), addOut{Sum: sum}, nil
}

const sleepSchema = `{"type":"object","properties":{
	"ms":{"type":"integer","minimum":0,"maximum":3600000,"description":"milliseconds to sleep"}},
	"required":["ms"],"additionalProperties":false}`

type sleepIn struct {
	Ms int64 `json:"ms"`
}

// sleep writes "sleeping Nms" to stderr when it starts, so a test knows the
// call is in flight. It returns early when the request is cancelled
// (notifications/cancelled or a closed connection) and then writes
// "cancelled sleep", so a test can see that cancellation reached the child.
func (d *demo) sleep(ctx context.Context, _ *mcp.CallToolRequest, in sleepIn) (*mcp.CallToolResult, any, error) {
	fmt.Fprintf(d.stderr, "sleeping %dms\n", in.Ms)
	t := time.NewTimer(time.Duration(in.Ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return text(fmt.Sprintf("slept %dms", in.Ms)), nil, nil
	case <-ctx.Done():
		fmt.Fprintln(d.stderr, "cancelled sleep")
		return nil, nil, ctx.Err()
	}
}

const progressSchema = `{"type":"object","properties":{
	"steps":{"type":"integer","minimum":0,"maximum":1000000,"description":"number of progress notifications"},
	"delayMs":{"type":"integer","minimum":0,"maximum":60000,"default":0,"description":"pause before each step, in milliseconds"}},
	"required":["steps"],"additionalProperties":false}`

type progressIn struct {
	Steps   int   `json:"steps"`
	DelayMs int64 `json:"delayMs"`
}

// progress implements the receiver side of MCP progress (basic/utilities/
// progress): notifications carry the request's progressToken, and progress
// increases with every notification.
func progress(ctx context.Context, req *mcp.CallToolRequest, in progressIn) (*mcp.CallToolResult, any, error) {
	token := req.Params.GetProgressToken()
	for i := 1; i <= in.Steps; i++ {
		if err := pause(ctx, time.Duration(in.DelayMs)*time.Millisecond); err != nil {
			return nil, nil, err
		}
		if token == nil {
			continue
		}
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      float64(i),
			Total:         float64(in.Steps),
			Message:       fmt.Sprintf("step %d of %d", i, in.Steps),
		})
		if err != nil {
			return nil, nil, fmt.Errorf("sending progress: %w", err)
		}
	}
	return text(fmt.Sprintf("done %d", in.Steps)), nil, nil
}

func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func cwd(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, nil, err
	}
	return text(dir), nil, nil
}

// rootsRequestID names the roots/list input request in a multi round-trip
// tools/call (SEP-2322).
const rootsRequestID = "roots"

// roots asks the client for its roots. It is written as a multi round-trip
// handler: on the 2026-07-28 revision the client receives an input_required
// result and retries with inputResponses; for older clients the SDK sends a
// plain roots/list request and calls the handler again with the answer.
// A client that did not declare the roots capability gets "[]": asking it
// would only produce -32601.
func roots(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	if caps := req.ClientCapabilities(); caps == nil || caps.RootsV2 == nil {
		return text("[]"), nil, nil
	}
	resp, ok := req.Params.InputResponses[rootsRequestID]
	if !ok {
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{rootsRequestID: &mcp.ListRootsParams{}}}, nil, nil
	}
	lr, ok := resp.(*mcp.ListRootsResult)
	if !ok {
		return nil, nil, fmt.Errorf("inputResponses[%q] is %T, want a roots/list result", rootsRequestID, resp)
	}
	list := lr.Roots
	if list == nil {
		list = []*mcp.Root{}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, nil, err
	}
	return text(string(b)), nil, nil
}

const envSchema = `{"type":"object","properties":{
	"name":{"type":"string","minLength":1,"description":"environment variable name"}},
	"required":["name"],"additionalProperties":false}`

type envIn struct {
	Name string `json:"name"`
}

func env(_ context.Context, _ *mcp.CallToolRequest, in envIn) (*mcp.CallToolResult, any, error) {
	return text(os.Getenv(in.Name)), nil, nil
}

func pid(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	return text(strconv.Itoa(os.Getpid())), nil, nil
}

// DefaultCrashCode is the exit code of the crash tool when none is given.
const DefaultCrashCode = 3

const crashSchema = `{"type":"object","properties":{
	"code":{"type":"integer","minimum":0,"maximum":255,"default":3,"description":"exit code"},
	"stderr":{"type":"string","default":"","description":"text written to stderr before exiting"}},
	"additionalProperties":false}`

type crashIn struct {
	Code   int    `json:"code"`
	Stderr string `json:"stderr"`
}

// crash exits the whole process: only use it in a child process.
func (d *demo) crash(_ context.Context, _ *mcp.CallToolRequest, in crashIn) (*mcp.CallToolResult, any, error) {
	io.WriteString(d.stderr, in.Stderr)
	os.Exit(in.Code)
	panic("unreachable")
}

// maxBig bounds the big tool (64 MiB): larger answers are not a useful test.
const maxBig = 64 << 20

const bigSchema = `{"type":"object","properties":{
	"bytes":{"type":"integer","minimum":0,"maximum":67108864,"description":"length of the returned text in bytes"}},
	"required":["bytes"],"additionalProperties":false}`

type bigIn struct {
	Bytes int `json:"bytes"`
}

// big returns a repeating alphabet, so that truncation and reordering show.
func big(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
	const pattern = "abcdefghijklmnopqrstuvwxyz0123456789"
	n := min(max(in.Bytes, 0), maxBig)
	s := strings.Repeat(pattern, n/len(pattern)+1)[:n]
	return text(s), nil, nil
}

// InitInfo is the JSON text of the init tool's result.
type InitInfo struct {
	// Raw is the initialize request line exactly as the client sent it
	// (without the newline); "" when unavailable (a server made by NewServer,
	// or a client on the stateless revision).
	Raw             string          `json:"raw"`
	ProtocolVersion string          `json:"protocolVersion,omitempty"`
	ClientInfo      json.RawMessage `json:"clientInfo,omitempty"`
	Capabilities    json.RawMessage `json:"capabilities"`
}

func (d *demo) init(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
	info, err := d.initInfo(req)
	if err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, nil, err
	}
	return text(string(b)), nil, nil
}

func (d *demo) initInfo(req *mcp.CallToolRequest) (*InitInfo, error) {
	if line := d.rec.Line(); line != nil {
		var msg struct {
			Params struct {
				ProtocolVersion string          `json:"protocolVersion"`
				ClientInfo      json.RawMessage `json:"clientInfo"`
				Capabilities    json.RawMessage `json:"capabilities"`
			} `json:"params"`
		}
		if err := json.Unmarshal(line, &msg); err != nil {
			return nil, fmt.Errorf("parsing the recorded initialize line: %w", err)
		}
		p := msg.Params
		return &InitInfo{Raw: string(line), ProtocolVersion: p.ProtocolVersion, ClientInfo: p.ClientInfo, Capabilities: p.Capabilities}, nil
	}
	info := &InitInfo{}
	if ip := req.Session.InitializeParams(); ip != nil {
		info.ProtocolVersion = ip.ProtocolVersion
		info.ClientInfo, _ = json.Marshal(ip.ClientInfo)
	}
	caps, err := capabilitiesJSON(req.ClientCapabilities())
	info.Capabilities = caps
	return info, err
}

// capabilitiesJSON marshals caps as the wire shows them: the SDK's struct
// always marshals a "roots" object (go-sdk#607), so it is replaced by RootsV2.
func capabilitiesJSON(caps *mcp.ClientCapabilities) (json.RawMessage, error) {
	if caps == nil {
		return json.RawMessage("{}"), nil
	}
	b, err := json.Marshal(caps)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "roots")
	if caps.RootsV2 != nil {
		m["roots"] = caps.RootsV2
	}
	return json.Marshal(m)
}

const failSchema = `{"type":"object","properties":{
	"message":{"type":"string","description":"the error text"}},
	"required":["message"],"additionalProperties":false}`

type failIn struct {
	Message string `json:"message"`
}

// fail is a tool that ran and failed: a result with isError, not a JSON-RPC
// error (server/tools, "Error Handling").
func fail(_ context.Context, _ *mcp.CallToolRequest, in failIn) (*mcp.CallToolResult, any, error) {
	res := text(in.Message)
	res.IsError = true
	return res, nil, nil
}

const stderrSchema = `{"type":"object","properties":{
	"text":{"type":"string","description":"written to stderr as is"}},
	"required":["text"],"additionalProperties":false}`

type stderrIn struct {
	Text string `json:"text"`
}

func (d *demo) writeStderr(_ context.Context, _ *mcp.CallToolRequest, in stderrIn) (*mcp.CallToolResult, any, error) {
	if _, err := io.WriteString(d.stderr, in.Text); err != nil {
		return nil, nil, err
	}
	return text("ok"), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

const askSchema = `{"type":"object","properties":{
	"question":{"type":"string","description":"the message shown to the user"}},
	"required":["question"],"additionalProperties":false}`

// AskFormSchema is the form the ask tool requests (MCP elicitation's flat
// object of primitive properties).
const AskFormSchema = `{"type":"object","properties":{
	"name":{"type":"string","title":"Name","description":"your name","minLength":1},
	"color":{"type":"string","title":"Colour","enum":["red","green","blue"],"default":"green"},
	"agree":{"type":"boolean","title":"Agree","description":"agree to the terms"},
	"count":{"type":"integer","title":"Count","minimum":1,"maximum":10}},
	"required":["name"]}`

type askIn struct {
	Question string `json:"question"`
}

// askRequestID names the elicitation input request in a multi round-trip
// tools/call (SEP-2322).
const askRequestID = "ask"

// ask asks the client for a form and returns the action and, on accept,
// the content as JSON: "accept {...}", "decline" or "cancel". Like roots it
// is a multi round-trip handler: on the 2026-07-28 revision the client
// receives an input_required result holding the elicitation and retries
// with its answer; for older clients the SDK sends elicitation/create,
// nested in the call, and calls the handler again with the answer. A
// client without the elicitation capability makes it a tool error.
func ask(_ context.Context, req *mcp.CallToolRequest, in askIn) (*mcp.CallToolResult, any, error) {
	resp, ok := req.Params.InputResponses[askRequestID]
	if !ok {
		if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "elicitation failed: the client does not support elicitation"}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{
			askRequestID: &mcp.ElicitParams{Message: in.Question, RequestedSchema: rawSchema(AskFormSchema)}}}, nil, nil
	}
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return nil, nil, fmt.Errorf("inputResponses[%q] is %T, want an elicitation result", askRequestID, resp)
	}
	if res.Action != "accept" {
		return text(res.Action), nil, nil
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return nil, nil, err
	}
	return text("accept " + string(b)), nil, nil
}

// counter returns the next number of the process's counter: a child's
// state, which survives only as long as the process (a test shows a child
// outlived a daemon upgrade by counting on).
func (d *demo) counter(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	return text(strconv.FormatInt(d.count.Add(1), 10)), nil, nil
}

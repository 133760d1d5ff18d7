package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	"mcpx.dev/mcpx/mcp/jsonrpc"
)

// dispatch routes one message from the child. An error ends the session.
// related is the raw id of the request the message relates to, when the
// transport knows it (nil otherwise).
func (s *Session) dispatch(msg, related []byte) error {
	if i := jsonrpc.SkipSpace(msg, 0); i < len(msg) && msg[i] == '[' {
		// JSON-RPC batches were allowed by 2024-11-05 and 2025-03-26.
		var err error
		jsonrpc.Elements(msg, func(m []byte) {
			if err == nil {
				err = s.dispatchOne(m, msg, related)
			}
		})
		return err
	}
	return s.dispatchOne(msg, msg, related)
}

func (s *Session) dispatchOne(msg, line, related []byte) error {
	e, err := jsonrpc.Parse(msg)
	switch {
	case err != nil:
		return s.violation(line, err.Error())
	case e.IsResponse():
		s.deliver(&e)
	case e.IsRequest():
		s.answer(&e, related)
	case e.IsNotification():
		s.notification(&e)
	default:
		return s.violation(line, "not a JSON-RPC message")
	}
	return nil
}

// deliver hands a response to the call waiting for it. Late responses, for
// calls that were cancelled or abandoned, are dropped.
//
// Spec (basic/utilities/cancellation): "The sender of the cancellation
// notification SHOULD ignore any response to the request that arrives
// afterward."
func (s *Session) deliver(e *jsonrpc.Message) {
	id, ok := parseID(e.ID)
	if !ok {
		// e.g. an error answering a request the child could not parse.
		s.log.Warn("mcp child answered a request id mcpx never sent", "id", string(e.ID), "error", string(e.Error))
		return
	}
	s.mu.Lock()
	c := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if c == nil {
		s.log.Debug("dropping late mcp response", "id", id)
		return
	}
	if e.Error != nil {
		rerr := new(jsonrpc.Error)
		if err := json.Unmarshal(e.Error, rerr); err != nil {
			rerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "malformed error from child: " + string(truncate(e.Error, 200))}
		}
		c.deliver(response{err: rerr})
		return
	}
	c.deliver(response{result: e.Result})
}

// answer replies to a request from the child. Replies are sent off the
// reader goroutine: a child blocked writing to us must never stop us from
// reading (the two pipes would deadlock).
//
// Spec (client/roots, basic/utilities/ping, client/sampling,
// client/elicitation): the server may ask the client for roots/list, ping,
// sampling/createMessage and elicitation/create.
func (s *Session) answer(e *jsonrpc.Message, related []byte) {
	method := e.Method
	if method == jsonrpc.MethodElicit || method == jsonrpc.MethodSample {
		s.input(e.ID, method, e.Params, related)
		return
	}
	var result []byte
	var rerr *jsonrpc.Error
	switch method {
	case jsonrpc.MethodPing:
		// Spec (basic/utilities/ping): "The receiver MUST respond promptly
		// with an empty response".
		result = []byte("{}")
	case jsonrpc.MethodRootsList:
		// Closed here, on the reader goroutine, before any later message
		// is read: whoever sees a later response knows whether the child
		// had asked by then (awaitStartupRoots relies on it).
		s.askedOnce.Do(func() { close(s.rootsAsked) })
		var err error
		if result, err = rootsResult(s.opts); err != nil {
			rerr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
	default:
		rerr = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("method not found: mcpx does not serve %q to child servers", method)}
	}
	if rerr != nil {
		s.log.Debug("refusing mcp request from child", "method", method, "code", rerr.Code)
	}
	var sent func()
	if method == jsonrpc.MethodRootsList {
		sent = func() { s.rootsOnce.Do(func() { close(s.rootsAnswered) }) }
		if m := s.opts.RootsMemo; m != nil && s.opts.Root != "" {
			// A child of a definition remembered as never asking asked
			// after all (its program changed under the same command line):
			// wait for the next ones.
			if asks, known := m.Asks(); known && !asks {
				m.set(true)
			}
		}
	}
	s.sendAsyncThen("answer to "+method, replyMessage(e.ID, result, rerr), sent)
}

// replyMessage is the response to id: rerr if not nil, else result.
func replyMessage(id, result []byte, rerr *jsonrpc.Error) []byte {
	if rerr != nil {
		return jsonrpc.AppendError(nil, id, rerr)
	}
	return jsonrpc.AppendResult(make([]byte, 0, 64+len(result)), id, result)
}

// notification handles a notification from the child.
func (s *Session) notification(e *jsonrpc.Message) {
	method := e.Method
	if method == jsonrpc.MethodProgress {
		s.progress(e.Params)
		return
	}
	if f := s.opts.OnNotify; f != nil {
		// A copy: the envelope's bytes may be a reused read buffer.
		params := json.RawMessage(bytes.Clone(e.Params))
		defer f(method, params)
	}
	switch method {
	// Spec (server/tools#list-changed-notification): "When the list of
	// available tools changes, servers that declared the listChanged
	// capability SHOULD send a notification". Same for resources and
	// prompts.
	case jsonrpc.MethodToolsListChanged:
		s.tools.invalidate()
		s.listChanged(jsonrpc.MethodToolsList)
	case jsonrpc.MethodResourcesListChanged:
		s.resources.invalidate()
		s.templates.invalidate()
		s.listChanged(jsonrpc.MethodResourcesList, jsonrpc.MethodResourceTemplatesList)
	case jsonrpc.MethodPromptsListChanged:
		s.prompts.invalidate()
		s.listChanged(jsonrpc.MethodPromptsList)
	case jsonrpc.MethodMessage:
		s.logMessage(e.Params)
	case jsonrpc.MethodListenAcknowledged:
		s.listenAcked(e.Params)
	default:
		s.log.Debug("ignoring mcp notification", "method", method)
	}
}

// progress routes notifications/progress to the call that asked for it.
//
// Spec (basic/utilities/progress): "The receiver MAY then send progress
// notifications containing: The original progress token, The current
// progress value so far, An optional total value, An optional message".
func (s *Session) progress(params []byte) {
	tok := jsonrpc.Member(params, `"progressToken"`)
	id, ok := parseID(tok)
	if !ok {
		s.log.Debug("ignoring progress for an unknown token", "token", string(tok))
		return
	}
	s.mu.Lock()
	c := s.pending[id]
	s.mu.Unlock()
	if c == nil || c.onProgress == nil {
		s.log.Debug("ignoring progress for an unknown token", "token", string(tok))
		return
	}
	c.progress(params)
}

// logMessage logs a notifications/message record (spec:
// server/utilities/logging) at the matching slog level.
func (s *Session) logMessage(params []byte) {
	var m struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(params, &m); err != nil {
		s.log.Debug("malformed notifications/message", "err", err)
		return
	}
	level := slog.LevelInfo
	switch m.Level {
	case "debug":
		level = slog.LevelDebug
	case "info", "notice":
		level = slog.LevelInfo
	case "warning":
		level = slog.LevelWarn
	case "error", "critical", "alert", "emergency":
		level = slog.LevelError
	}
	data := string(m.Data)
	if s, ok := jsonrpc.Unquote(m.Data); ok {
		data = s
	}
	attrs := []any{"level_mcp", m.Level, "data", data}
	if m.Logger != "" {
		attrs = append(attrs, "logger", m.Logger)
	}
	s.log.Log(context.Background(), level, "mcp child log", attrs...)
}

// ProtocolError is a message from the child that breaks the protocol. It
// ends the session.
type ProtocolError struct {
	Line   []byte // the offending message, truncated
	Reason string
	Hint   string // what the child's author should fix, if known
}

func (e *ProtocolError) Error() string {
	msg := fmt.Sprintf("child sent %s: %s", e.Reason, strconv.Quote(string(e.Line)))
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

// violation builds the protocol error for line, with the transport's hint.
func (s *Session) violation(line []byte, reason string) error {
	return &ProtocolError{Line: truncate(line, 200), Reason: reason, Hint: s.x.ViolationHint}
}

// truncate returns at most n bytes of b, marked when cut.
func truncate(b []byte, n int) []byte {
	b = bytes.TrimSpace(b)
	if len(b) <= n {
		return bytes.Clone(b)
	}
	return append(bytes.Clone(b[:n]), "…"...)
}

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"mcpx.dev/mcpx/wire"
)

// A child's request for input during `mcpx call` (an elicitation form) is
// asked on the terminal: one prompt per property of the requested schema,
// with its title, description, choices and default. Without a terminal on
// stdin the call declines every request, saying why on stderr (callInput).
// A URL-mode elicitation shows the URL and waits for Enter. Sampling is
// declined: the CLI has no model.

// maxFieldAttempts bounds the prompts for one field before the form is
// declined.
const maxFieldAttempts = 3

// formField is one property of an elicitation's requested schema, in the
// schema's order.
type formField struct {
	Name        string
	Type        string   `json:"type"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Enum        []string `json:"enum"`
	OneOf       []struct {
		Const string `json:"const"`
		Title string `json:"title"`
	} `json:"oneOf"`
	Items *struct {
		Enum  []string `json:"enum"`
		AnyOf []struct {
			Const string `json:"const"`
			Title string `json:"title"`
		} `json:"anyOf"`
	} `json:"items"`
	Default  json.RawMessage `json:"default"`
	Required bool
}

// choices are the values the field may take, with their labels; nil for a
// free field.
func (f *formField) choices() (values, labels []string) {
	switch {
	case len(f.Enum) > 0:
		return f.Enum, f.Enum
	case len(f.OneOf) > 0:
		for _, o := range f.OneOf {
			values, labels = append(values, o.Const), append(labels, cmp.Or(o.Title, o.Const))
		}
	case f.Items != nil && len(f.Items.Enum) > 0:
		return f.Items.Enum, f.Items.Enum
	case f.Items != nil:
		for _, o := range f.Items.AnyOf {
			values, labels = append(values, o.Const), append(labels, cmp.Or(o.Title, o.Const))
		}
	}
	return values, labels
}

// formFields reads the properties of a requested schema in their order.
func formFields(schema json.RawMessage) ([]formField, error) {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, fmt.Errorf("the requested schema is not an object: %w", err)
	}
	if len(top.Properties) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("the requested schema's properties are not an object")
	}
	var fields []formField
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		f := formField{Name: t.(string)}
		if err := d.Decode(&f); err != nil {
			return nil, fmt.Errorf("property %q: %w", f.Name, err)
		}
		f.Required = slices.Contains(top.Required, f.Name)
		fields = append(fields, f)
	}
	return fields, nil
}

// terminalForm asks the questions of requests for input on a terminal.
// One form at a time: the broker may ask again while a form is open.
type terminalForm struct {
	in  *bufio.Reader
	out io.Writer
	mu  chan struct{} // a one-slot lock that a cancelled context can give up on
}

func newTerminalForm(in io.Reader, out io.Writer) *terminalForm {
	return &terminalForm{in: bufio.NewReader(in), out: out, mu: make(chan struct{}, 1)}
}

// answer is the client's OnInput.
func (f *terminalForm) answer(ctx context.Context, in wire.InputRequest) (wire.InputAnswer, error) {
	select {
	case f.mu <- struct{}{}:
		defer func() { <-f.mu }()
	case <-ctx.Done():
		return wire.InputAnswer{}, ctx.Err()
	}
	if in.Kind != wire.InputElicitation {
		fmt.Fprintf(f.out, "mcpx: declined the server's request for %s: mcpx call has no model to answer it\n", in.Kind)
		return wire.InputAnswer{Action: wire.ActionDecline}, nil
	}
	if in.Mode == wire.InputModeURL {
		return f.openURL(in)
	}
	return f.ask(in)
}

// openURL shows a URL-mode elicitation's URL and waits for the user: Enter
// (or a) accepts, saying the user will open it; d declines, c cancels. mcpx
// never opens the URL itself (spec client/elicitation: the client must not
// open it without the user's consent, and shows it in full).
func (f *terminalForm) openURL(in wire.InputRequest) (wire.InputAnswer, error) {
	fmt.Fprintf(f.out, "The server asks you to open a URL: %s\n  %s\n", cmp.Or(in.Message, "(no message)"), in.URL)
	action, err := f.line("Open it in your browser, then press Enter to accept (or d to decline, c to cancel): ")
	if err != nil {
		return wire.InputAnswer{Action: wire.ActionDecline}, nil
	}
	switch strings.ToLower(action) {
	case "", "a", "accept", "y", "yes":
		return wire.InputAnswer{Action: wire.ActionAccept}, nil
	case "c", "cancel":
		return wire.InputAnswer{Action: wire.ActionCancel}, nil
	case "d", "decline":
	default:
		fmt.Fprintf(f.out, "%q is none of Enter, d, c: declined\n", action)
	}
	return wire.InputAnswer{Action: wire.ActionDecline}, nil
}

// ask runs one form. EOF on the terminal declines.
func (f *terminalForm) ask(in wire.InputRequest) (wire.InputAnswer, error) {
	fields, err := formFields(in.RequestedSchema)
	if err != nil {
		return wire.InputAnswer{}, err
	}
	fmt.Fprintf(f.out, "The server asks: %s\n", cmp.Or(in.Message, "(no message)"))
	action, err := f.line("Answer (a)ccept, (d)ecline or (c)ancel? [a]: ")
	if err != nil {
		return wire.InputAnswer{Action: wire.ActionDecline}, nil
	}
	switch strings.ToLower(action) {
	case "", "a", "accept":
	case "d", "decline":
		return wire.InputAnswer{Action: wire.ActionDecline}, nil
	case "c", "cancel":
		return wire.InputAnswer{Action: wire.ActionCancel}, nil
	default:
		fmt.Fprintf(f.out, "%q is none of a, d, c: declined\n", action)
		return wire.InputAnswer{Action: wire.ActionDecline}, nil
	}
	content := map[string]any{}
	for i := range fields {
		v, set, err := f.field(&fields[i])
		if err != nil {
			return wire.InputAnswer{Action: wire.ActionDecline}, nil
		}
		if set {
			content[fields[i].Name] = v
		}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return wire.InputAnswer{}, err
	}
	return wire.InputAnswer{Action: wire.ActionAccept, Content: b}, nil
}

// field prompts for one field until its answer parses (at most
// maxFieldAttempts times). An empty answer takes the default, or leaves an
// optional field out.
func (f *terminalForm) field(fd *formField) (any, bool, error) {
	values, labels := fd.choices()
	label := cmp.Or(fd.Title, fd.Name)
	if fd.Description != "" {
		label += " (" + fd.Description + ")"
	}
	for i, l := range labels {
		label += fmt.Sprintf("\n  %d) %s", i+1, l)
	}
	var def any
	if len(fd.Default) > 0 {
		json.Unmarshal(fd.Default, &def) //nolint:errcheck // a bad default is no default
	}
	prompt := label
	switch {
	case def != nil:
		d, _ := json.Marshal(def)
		prompt += fmt.Sprintf(" [%s]", d)
	case fd.Type == "boolean":
		prompt += " [y/n]"
	case !fd.Required:
		prompt += " [optional]"
	}
	prompt += ": "
	for range maxFieldAttempts {
		s, err := f.line(prompt)
		if err != nil {
			return nil, false, err
		}
		if s == "" {
			if def != nil {
				return def, true, nil
			}
			if !fd.Required {
				return nil, false, nil
			}
			fmt.Fprintf(f.out, "%s is required\n", fd.Name)
			continue
		}
		v, err := parseField(fd, s, values)
		if err == nil {
			return v, true, nil
		}
		fmt.Fprintf(f.out, "%s: %v\n", fd.Name, err)
	}
	return nil, false, fmt.Errorf("no valid answer for %s", fd.Name)
}

// parseField turns one typed answer into the field's JSON value. A choice
// may be given by its number or its value; a multi-select as a comma list.
func parseField(fd *formField, s string, values []string) (any, error) {
	pick := func(s string) (string, error) {
		s = strings.TrimSpace(s)
		if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(values) {
			return values[n-1], nil
		}
		if slices.Contains(values, s) {
			return s, nil
		}
		return "", fmt.Errorf("%q is not one of the choices", s)
	}
	switch fd.Type {
	case "boolean":
		switch strings.ToLower(s) {
		case "y", "yes", "true":
			return true, nil
		case "n", "no", "false":
			return false, nil
		}
		return nil, errors.New("answer y or n")
	case "integer":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, errors.New("want a number")
		}
		return n, nil
	case "array":
		var out []string
		for part := range strings.SplitSeq(s, ",") {
			v, err := pick(part)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	if len(values) > 0 {
		return pick(s)
	}
	return s, nil
}

// line prompts and reads one line, trimmed; io.EOF when the input ends.
func (f *terminalForm) line(prompt string) (string, error) {
	fmt.Fprint(f.out, prompt)
	s, err := f.in.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(f.out)
		return "", err
	}
	return strings.TrimSpace(s), nil
}

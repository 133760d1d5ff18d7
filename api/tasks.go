package api

import (
	"net/http"
	"time"

	"mcpx.dev/mcpx/broker"
	"mcpx.dev/mcpx/wire"
)

// Tasks over REST: a tool call with ?task=true answers 202 Accepted with
// the Task (Location: /v1/tasks/{id}) as soon as the child created it;
// /v1/tasks lists the caller's own, /v1/tasks/{id} is one's status (DELETE
// cancels it), /v1/tasks/{id}/result waits for its result. A task id names
// a task only for the caller that started it (broker/tasks.go).

// taskQuery reads ?task= of a tool call.
func taskQuery(r *http.Request) (bool, error) { return boolQuery(r, wire.QueryTask, "call") }

func (s *server) startTask(w http.ResponseWriter, r *http.Request, req broker.Request, tool string, args []byte) error {
	t, err := s.b.StartToolTask(r.Context(), req, tool, args, 0)
	if err != nil {
		return err
	}
	rt, _ := wire.Lookup(wire.OpGetTask)
	w.Header().Set("Location", rt.Path(t.ID))
	writeJSON(w, http.StatusAccepted, taskDoc(t))
	return nil
}

func taskDoc(t broker.Task) wire.Task {
	doc := wire.Task{ID: t.ID, Server: t.Server, Tool: t.Tool, Status: t.Status, StatusMessage: t.StatusMessage,
		Created: timeOrNil(t.Created), Updated: timeOrNil(t.Updated)}
	if t.TTL > 0 {
		doc.TTL = t.TTL.String()
	}
	if t.PollInterval > 0 {
		doc.PollInterval = t.PollInterval.String()
	}
	return doc
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (s *server) listTasks(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	out := wire.TaskList{Tasks: []wire.Task{}}
	for _, t := range s.b.Tasks(c) {
		out.Tasks = append(out.Tasks, taskDoc(t))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *server) getTask(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	t, err := s.b.TaskStatus(r.Context(), c, param(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskDoc(t))
	return nil
}

func (s *server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	t, err := s.b.CancelTask(r.Context(), c, param(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, taskDoc(t))
	return nil
}

func (s *server) taskResult(w http.ResponseWriter, r *http.Request) error {
	c, _ := callerFrom(r.Context())
	res, err := s.b.TaskResult(r.Context(), c, param(r, "id"))
	if err != nil {
		return err
	}
	writeRaw(w, res)
	return nil
}

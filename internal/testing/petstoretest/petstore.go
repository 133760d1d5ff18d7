// Package petstoretest is a small Swagger Petstore service for the tests
// of OpenAPI servers (getPetById, findPetsByStatus, addPet under
// /api/v3, as the petstore3 document describes them), and the path of
// that document. Tests only.
package petstoretest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
)

// Pet is a pet as the service keeps it.
type Pet struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status,omitempty"`
}

// Cleaner is what Start needs of a test: testing.TB, or a script's Defer.
type Cleaner interface{ Cleanup(func()) }

// Start serves the petstore on a loopback port until the test ends; its
// base URL for the document's operations is the returned URL + "/api/v3".
// Pet 1 is "doggie" (available).
func Start(t Cleaner) string {
	var mu sync.Mutex
	pets := map[int64]Pet{1: {ID: 1, Name: "doggie", Status: "available"}}
	next := int64(2)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v3/pet/{petId}", func(w http.ResponseWriter, r *http.Request) {
		id, err := strconv.ParseInt(r.PathValue("petId"), 10, 64)
		mu.Lock()
		p, ok := pets[id]
		mu.Unlock()
		if err != nil || !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"code":404,"message":"Pet not found"}`))
			return
		}
		writeJSON(w, p)
	})
	mux.HandleFunc("GET /api/v3/pet/findByStatus", func(w http.ResponseWriter, r *http.Request) {
		found := []Pet{}
		mu.Lock()
		for _, p := range pets {
			if p.Status == r.URL.Query().Get("status") {
				found = append(found, p)
			}
		}
		mu.Unlock()
		writeJSON(w, found)
	})
	mux.HandleFunc("POST /api/v3/pet", func(w http.ResponseWriter, r *http.Request) {
		var p Pet
		if json.NewDecoder(r.Body).Decode(&p) != nil || p.Name == "" {
			http.Error(w, `{"code":400,"message":"Invalid input"}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		p.ID, next = next, next+1
		pets[p.ID] = p
		mu.Unlock()
		writeJSON(w, p)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // a test service
}

// Spec is the path of the Swagger Petstore 3.0 document
// (adapter/openapi/testdata/petstore3.yaml).
func Spec() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "adapter", "openapi", "testdata", "petstore3.yaml")
}

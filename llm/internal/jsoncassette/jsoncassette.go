// Package jsoncassette serves a provider's turns written from its
// documented wire format, for the tests of Saucer's native clients (the
// Messages and Responses APIs' computer use): each request must equal, as
// JSON, the turn's NAME-request.json, and gets NAME-response.json.
package jsoncassette

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// Server serves Turns in order from Dir: a POST to Path with Headers.
type Server struct {
	T     testing.TB
	Dir   string
	Turns []string // file prefixes: NAME-request.json, NAME-response.json
	Path  string
	// Headers each request must carry, by canonical name.
	Headers map[string]string

	mu sync.Mutex
	n  int
}

// Served is how many requests came.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	i := s.n
	s.n++
	s.mu.Unlock()
	if i >= len(s.Turns) {
		s.T.Errorf("request %d: the cassette has %d turns", i+1, len(s.Turns))
		http.Error(w, "no more turns", http.StatusInternalServerError)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != s.Path {
		s.T.Errorf("request %s %s, want POST %s", r.Method, r.URL.Path, s.Path)
	}
	for k, want := range s.Headers {
		if got := r.Header.Get(k); got != want {
			s.T.Errorf("request %d: header %s = %q, want %q", i+1, k, got, want)
		}
	}
	body, _ := io.ReadAll(r.Body)
	var got any
	if err := json.Unmarshal(body, &got); err != nil {
		s.T.Errorf("request %d is not JSON: %v", i+1, err)
	}
	if want := ReadJSON(s.T, filepath.Join(s.Dir, s.Turns[i]+"-request.json")); !reflect.DeepEqual(got, want) {
		gb, _ := json.MarshalIndent(got, "", " ")
		wb, _ := json.MarshalIndent(want, "", " ")
		s.T.Errorf("request %d differs from %s-request.json:\ngot  %s\nwant %s", i+1, s.Turns[i], gb, wb)
	}
	reply, err := os.ReadFile(filepath.Join(s.Dir, s.Turns[i]+"-response.json"))
	if err != nil {
		s.T.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(reply)
}

// ReadJSON is the JSON value in the file at path.
func ReadJSON(t testing.TB, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

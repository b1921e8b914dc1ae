package constellation

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/server/store"
)

func TestAPICreatesListsAndStreams(t *testing.T) {
	sc := loadSuite(t)[0] // report_copy_check
	c := newCluster(t, store.NewMemory(), 0, "linux1", "linux2", "linux3")
	o := c.orchestrator(t, plannerFor(t, sc, 0), Options{})
	hs := httptest.NewServer(Handler(o, suiteToken, c.srv.Handler()))
	defer hs.Close()
	do := func(method, path, body, key string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for _, tc := range []struct {
		method, path, body, key string
		want                    int
	}{
		{"POST", "/api/constellations", `{"request":"x"}`, "", http.StatusUnauthorized},
		{"POST", "/api/constellations", `{"request":"x"}`, "wrong", http.StatusForbidden},
		{"POST", "/api/constellations", `{"ask":"x"}`, suiteToken, http.StatusBadRequest},
		{"GET", "/api/constellations/nope", "", suiteToken, http.StatusNotFound},
		{"GET", "/api/clients", "", suiteToken, http.StatusOK}, // the server's own API, beside
	} {
		if resp := do(tc.method, tc.path, tc.body, tc.key); resp.StatusCode != tc.want {
			t.Errorf("%s %s (key %q): %d, want %d", tc.method, tc.path, tc.key, resp.StatusCode, tc.want)
		}
	}
	resp := do("POST", "/api/constellations", `{"request":"copy the report and check it"}`, suiteToken)
	var created Graph
	json.NewDecoder(resp.Body).Decode(&created)
	if resp.StatusCode != http.StatusCreated || created.ID == "" {
		t.Fatalf("create: %d %+v", resp.StatusCode, created)
	}
	stream := do("GET", "/api/constellations/"+created.ID+"/events", "", suiteToken)
	defer stream.Body.Close()
	if ct := stream.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	kinds := map[string]int{}
	var end Event
	sc2 := bufio.NewScanner(stream.Body)
	sc2.Buffer(nil, 1<<20)
	deadline := time.AfterFunc(30*time.Second, func() { stream.Body.Close() })
	defer deadline.Stop()
	for sc2.Scan() {
		line := sc2.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		var e Event
		if err := json.Unmarshal([]byte(line[6:]), &e); err != nil {
			t.Fatal(err)
		}
		kinds[e.Kind]++
		if e.Kind == "end" {
			end = e
			break
		}
	}
	if end.Graph == nil || end.Graph.Status != Completed || kinds["node_start"] == 0 || kinds["node_end"] != 3 || end.Graph.PlannerSteps == 0 {
		t.Fatalf("events %v, end %+v", kinds, end)
	}
	resp = do("GET", "/api/constellations", "", suiteToken)
	var list Page
	json.NewDecoder(resp.Body).Decode(&list)
	if len(list.Constellations) != 1 || list.Constellations[0].ID != created.ID || list.Constellations[0].Nodes.Total != 3 ||
		list.Constellations[0].Nodes.Completed != 3 || list.Constellations[0].Status != Completed || list.Next != "" {
		t.Fatalf("list: %+v", list)
	}
	if kinds["planner"] == 0 {
		t.Errorf("no planner step in the stream: %v", kinds)
	}
	// An ended constellation's stream says so at once.
	again := do("GET", "/api/constellations/"+created.ID+"/events", "", suiteToken)
	var buf bytes.Buffer
	buf.ReadFrom(again.Body)
	if !strings.Contains(buf.String(), "event: end") {
		t.Fatalf("stream of an ended constellation: %s", buf.String())
	}
}

package evals_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/trajectory"
)

// finishScript writes a scripted model that finishes every agent with
// answer, and returns its spec.
func finishScript(t *testing.T, dir, name, answer string) string {
	t.Helper()
	return scriptSpec(t, dir, name, "loop: true\nreplies:\n  - tool_calls: [{name: finish_task, arguments: {result: "+answer+"}}]\n")
}

// downServer is an OpenAI-compatible server on loopback that is always
// unavailable; it counts the requests it refused.
func downServer(t *testing.T) (url string, asked *atomic.Int32) {
	asked = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"the model is loading","type":"server_error"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", asked
}

// A trial's model is opened by the one assembly: a case without a model
// gets the config's, and a model that is unavailable is passed over for
// its models.X.fallbacks, the switch recorded with the call.
func TestTrialModelsFromTheConfig(t *testing.T) {
	dir := t.TempDir()
	down, asked := downServer(t)
	cfg, err := config.FromYAML([]byte(`
model: ` + finishScript(t, dir, "configured", "from-the-config") + `
agent: {retry_backoff: 1ms, max_retries: 0}
providers:
  openai-compatible: {base_url: "` + down + `"}
models:
  "openai-compatible:big": {fallbacks: ["` + finishScript(t, dir, "fallback", "from-the-fallback") + `"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: models
cases:
  - id: no-model
    task: anything
    checks: [{answer: {exact: from-the-config}}]
  - id: down
    task: anything
    model: openai-compatible:big
    checks: [{answer: {exact: from-the-fallback}}]
`), 0o644)
	results := t.TempDir()
	rep, err := runSuite(t, suite, results, evals.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		tr := c.Trials[0]
		if !tr.Success {
			t.Errorf("%s: %s %s: %s", c.ID, tr.Status, tr.Failure, tr.Detail)
		}
	}
	if got := rep.Cases[0].Trials[0].Model; got != cfg.Model {
		t.Errorf("the case without a model ran %q, want the config's %q", got, cfg.Model)
	}
	if asked.Load() == 0 {
		t.Error("the unavailable model was never asked")
	}
	tj, err := trajectory.Read(filepath.Join(results, rep.Cases[1].Trials[0].Trajectory))
	if err != nil {
		t.Fatal(err)
	}
	switched := false
	for _, e := range tj.Events {
		if e.Call != nil && len(e.Call.Fallbacks) > 0 {
			switched = strings.Contains(e.Call.Fallbacks[0], "openai-compatible:big is unavailable, asking scripted:")
		}
	}
	if !switched {
		t.Error("the trial's recording has no switch to the fallback")
	}
}

// Judges are opened the same way: an unavailable judge model is passed
// over for its fallback.
func TestJudgeModelFallback(t *testing.T) {
	dir := t.TempDir()
	down, asked := downServer(t)
	judge := filepath.Join(dir, "judge.yaml")
	os.WriteFile(judge, []byte("loop: true\nreplies:\n  - text: '{\"pass\": true, \"score\": 0.9, \"reason\": \"fine\"}'\n"), 0o644)
	cfg, err := config.FromYAML([]byte(`
agent: {retry_backoff: 1ms, max_retries: 0}
providers:
  openai-compatible: {base_url: "` + down + `"}
models:
  "openai-compatible:judge": {fallbacks: ["scripted:` + judge + `"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	suite := filepath.Join(dir, "suite.yaml")
	os.WriteFile(suite, []byte(`name: judged
model: `+finishScript(t, dir, "agent", "done")+`
judge: openai-compatible:judge
cases:
  - id: judged
    task: anything
    checks: [{judge: {rubric: "anything goes"}}]
`), 0o644)
	rep, err := runSuite(t, suite, t.TempDir(), evals.Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	tr := rep.Cases[0].Trials[0]
	if !tr.Success || asked.Load() == 0 {
		t.Errorf("%s %s: %s (the down judge asked %d times)", tr.Status, tr.Failure, tr.Detail, asked.Load())
	}
}

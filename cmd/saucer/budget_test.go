package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/trajectory"
)

// noUsageServer is an OpenAI-compatible server on loopback that answers
// every request with a finish_task call and sends no usage, as some
// compatible servers do.
func noUsageServer(t *testing.T) (url string, requests *atomic.Int32) {
	requests = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"local","choices":[{"index":0,"message":{"role":"assistant","content":null,`+
			`"tool_calls":[{"id":"f1","type":"function","function":{"name":"finish_task","arguments":"{\"result\":\"all done\"}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", requests
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "saucer.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A cost budget for a model without a price is refused before anything
// starts: no model call, no recording, exit 2, and the message says what
// to do.
func TestRunRefusesACostBudgetItCannotEnforce(t *testing.T) {
	url, requests := noUsageServer(t)
	cfg := writeConfig(t, fmt.Sprintf("model: openai-compatible:local\nproviders: {openai-compatible: {base_url: %q}}\nbudget: {cost_usd: 0.5}\n", url))
	runs := t.TempDir()
	out, code := saucer(t, "run", "-c", cfg, "--runs", runs, "-C", t.TempDir(), "do it")
	if code != 2 || !strings.Contains(out, "budget.cost_usd ($0.5000) cannot be enforced: openai-compatible:local has no price") ||
		!strings.Contains(out, "prices:") {
		t.Errorf("exit %d\n%s", code, out)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
	if entries, _ := os.ReadDir(runs); len(entries) != 0 {
		t.Errorf("a refused run left a recording: %v", entries)
	}
}

// A server that sends no usage: the run counts the tokens itself, says
// so once, marks every figure "~", and shows an unknown price as "cost
// unknown", never $0.0000, on the terminal and in the recording.
func TestRunShowsEstimatesAndUnknownCost(t *testing.T) {
	url, _ := noUsageServer(t)
	for _, tc := range []struct{ prices, cost string }{
		{"", "cost unknown"},
		{`prices: {"openai-compatible:local": {prompt: 1000, completion: 1000}}`, "~$"},
	} {
		cfg := writeConfig(t, fmt.Sprintf("model: openai-compatible:local\nproviders: {openai-compatible: {base_url: %q}}\n%s\n", url, tc.prices))
		runs := t.TempDir()
		out, code := saucer(t, "run", "-c", cfg, "--runs", runs, "-C", t.TempDir(), "do it")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if strings.Contains(out, "$0.0000") {
			t.Errorf("$0.0000 shown:\n%s", out)
		}
		step := regexp.MustCompile(`tokens ~\d+\+~\d+, ` + regexp.QuoteMeta(tc.cost)).FindString(out)
		end := regexp.MustCompile(`FINISH after 1 steps \(tokens ~\d+ prompt, ~\d+ completion, ` + regexp.QuoteMeta(tc.cost)).FindString(out)
		if step == "" || end == "" || strings.Count(out, "reported no token usage") != 1 {
			t.Errorf("want the step and the end marked estimated with %q, and the reason once:\n%s", tc.cost, out)
		}
		dirs, _ := os.ReadDir(runs)
		if len(dirs) != 1 {
			t.Fatalf("recordings: %v", dirs)
		}
		tr, err := trajectory.Read(filepath.Join(runs, dirs[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		e := tr.End()
		if e == nil || !e.Usage.Estimated || !strings.HasPrefix(e.Cost, tc.cost) || (e.CostUSD == nil) != (tc.cost == "cost unknown") {
			t.Errorf("recorded end %+v", e)
		}
		if c := tr.Calls(); len(c) != 1 || c[0].Response == nil || !c[0].Response.Usage.Estimated {
			t.Errorf("recorded calls %+v", c)
		}
	}
}

// saucer serve refuses the same budget at start, before it listens.
func TestServeRefusesACostBudgetItCannotEnforce(t *testing.T) {
	url, _ := noUsageServer(t)
	cfg := writeConfig(t, fmt.Sprintf("model: openai-compatible:local\nproviders: {openai-compatible: {base_url: %q}}\nbudget: {cost_usd: 2}\n", url))
	// Were it to start, it would serve until this safety net ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "-c", cfg, "--token", "k-test-serve", "--addr", "127.0.0.1:0", "--store", "memory"})
	err := root.ExecuteContext(ctx)
	if err == nil || !strings.Contains(err.Error(), "budget.cost_usd ($2.0000) cannot be enforced: openai-compatible:local has no price") {
		t.Errorf("serve: %v\n%s", err, out.String())
	}
}

package constellation

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

// systemPrompts keeps the system prompt of every request that carries a
// node's task, by the node's "Step ID" line, and passes the request on.
type systemPrompts struct {
	llm.Model
	mu   sync.Mutex
	seen map[string][]string
}

func (m *systemPrompts) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	text := ""
	for _, msg := range req.Messages {
		text += msg.Content + "\n"
	}
	m.mu.Lock()
	for id := range m.seen {
		if strings.Contains(text, "Step "+id+" of the request.") {
			m.seen[id] = append(m.seen[id], req.Messages[0].Content)
		}
	}
	m.mu.Unlock()
	return m.Model.Complete(ctx, req)
}

func (m *systemPrompts) Stream(ctx context.Context, req *llm.Request, _ func(llm.Chunk)) (*llm.Response, error) {
	return m.Complete(ctx, req)
}

// The agents that work a node on a device are told which device it is
// (the id the constellation plans with; the devices here share a host
// name) and the folder their tools start in, as `saucer serve` builds
// them for devices connected as `saucer client`.
func TestNodeAgentsKnowTheirDevice(t *testing.T) {
	cfg := config.Default()
	cfg.Agent.RetryBackoff = config.Duration(time.Millisecond)
	model := &systemPrompts{Model: &ScriptedAgents{}, seen: map[string][]string{"n1": nil, "n2": nil}}
	srv, err := server.New(server.Options{Token: suiteToken, Logf: func(string, ...any) {},
		NewSession: server.Sessions(cfg, session.Options{Model: model})})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx, "test over")
		hs.Close()
	})
	dirs := map[string]string{}
	for _, id := range []string{"linux1", "linux2"} {
		dirs[id] = t.TempDir()
		dev, err := local.NewDevice(context.Background(), cfg, dirs[id], local.DeviceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		runDevice(t, hs.URL, id, dev)
	}
	plan := []PlanNode{{ID: "n1", Device: "linux1", Run: "pwd"}, {ID: "n2", Device: "linux2", Run: "pwd"}}
	prom := loadPrompts(t)
	o, err := New(Options{Devices: ServerDevices{srv}, NewPlanner: func(*Graph) (Stepper, error) {
		return NewPlanner(PlannerOptions{Model: &ScriptedPlanner{Nodes: plan}, Prompts: prom, Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
	}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.Run(context.Background(), "Where does each device's shell start?")
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %+v", err, g)
	}
	for _, n := range plan {
		prompts := model.seen[n.ID]
		if len(prompts) < 2 {
			t.Fatalf("node %s: %d requests seen, want the host's and the app's", n.ID, len(prompts))
		}
		for _, p := range prompts {
			if !strings.Contains(p, "- Device: "+n.Device+"\n") || !strings.Contains(p, "- Working directory: "+dirs[n.Device]+"\n") {
				t.Errorf("node %s on %s: the prompt does not say which device and folder:\n%s", n.ID, n.Device, p)
			}
		}
		if got := g.Node(n.ID).Result; got != dirs[n.Device] {
			t.Errorf("node %s: result %q, want %q", n.ID, got, dirs[n.Device])
		}
	}
}

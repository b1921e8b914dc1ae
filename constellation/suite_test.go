package constellation

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/internal/display"
	"github.com/saucerhq/saucer/internal/sandboxtest"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/strategy"
)

type suiteCase struct {
	Name string `yaml:"name"`
	// Devices are the case's devices: linux1, linux2 and linux3 unless
	// said; an id that starts with "sandbox" is a sandboxed device, one
	// that starts with "desktop" a desktop device under Xvfb.
	Devices []string     `yaml:"devices"`
	Nodes   []suiteNode  `yaml:"nodes"`
	Checks  []suiteCheck `yaml:"checks"`
}

// devices are the devices a case runs on.
func (sc suiteCase) devices() []string {
	if len(sc.Devices) == 0 {
		return []string{"linux1", "linux2", "linux3"}
	}
	return sc.Devices
}

type suiteNode = PlanNode

type suiteCheck struct {
	Device string `yaml:"device"`
	File   string `yaml:"file"`
	Equals string `yaml:"equals"`
	// HostAbsent is a path of this machine that must not exist: what a
	// sandboxed device's root did inside stays inside.
	HostAbsent string `yaml:"host_absent"`
}

func loadSuite(t testing.TB) []suiteCase {
	t.Helper()
	b, err := os.ReadFile("testdata/suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Cases []suiteCase `yaml:"cases"`
	}
	if err := yaml.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s.Cases
}

const suiteToken = "suite-token"

// cluster is an agent server on loopback with device clients connected
// over WebSockets (as `saucer client` connects), each with the real shell
// app working in its own directory.
type cluster struct {
	t       testing.TB
	srv     *server.Server
	st      store.Store
	handler *swapHandler
	http    *httptest.Server
	agents  *ScriptedAgents
	dirs    map[string]string
	// away is how long a device may stay away before its tasks fail.
	away time.Duration
	// member, when set, makes the server one of a cluster on a shared
	// PostgreSQL store.
	member server.Cluster
	mu     sync.Mutex
	stops  map[string]func()
}

// swapHandler lets a restarted server take over the same address.
type swapHandler struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

func newCluster(t testing.TB, st store.Store, modelLatency time.Duration, devices ...string) *cluster {
	t.Helper()
	return newClusterOf(t, st, nil, 300*time.Millisecond, modelLatency, devices...)
}

// newClusterOf is newCluster with the server a member of a cluster (nil:
// alone), its devices' away time given.
func newClusterOf(t testing.TB, st store.Store, member server.Cluster, away, modelLatency time.Duration, devices ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, st: st, member: member, handler: &swapHandler{}, agents: &ScriptedAgents{Latency: modelLatency}, dirs: map[string]string{}, away: away,
		stops: map[string]func(){}}
	if slices.ContainsFunc(devices, func(id string) bool { return strings.HasPrefix(id, "desktop") }) {
		desktoptest.Require(t, "mousepad")
		sharedDesktop(t)
	}
	c.startServer()
	c.http = httptest.NewServer(c.handler)
	t.Cleanup(c.http.Close)
	for _, id := range devices {
		c.dirs[id] = t.TempDir()
		c.connect(id)
	}
	return c
}

func (c *cluster) startServer() {
	prom := loadPrompts(c.t)
	srv, err := server.New(server.Options{Token: suiteToken, Store: c.st, Cluster: c.member, AwayTimeout: c.away, MaxTasks: 64,
		NewSession: func(spec server.SessionSpec) (server.Runner, error) {
			var m = spec.WrapModel(c.agents)
			return agent.New(agent.Options{Model: m, Dispatcher: spec.Dispatcher, Prompts: prom, AppDescriptions: spec.AppDescriptions,
				Observer: spec.Observer, Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
		}})
	if err != nil {
		c.t.Fatal(err)
	}
	c.srv = srv
	c.handler.mu.Lock()
	c.handler.h = srv.Handler()
	c.handler.mu.Unlock()
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx, "test over")
	})
}

// connect runs a device client until kill or the test's end. A device
// whose id starts with "sandbox" is `saucer client --sandbox`'s: its tools
// run as root in a throwaway sandbox, its directory bound at /root.
func (c *cluster) connect(id string) {
	t := c.t
	var dev *client.Client
	var err error
	if strings.HasPrefix(id, "desktop") {
		// A desktop device: the shell and desktop apps on the private
		// X11 desktop (Xvfb, its session bus and AT-SPI) the cluster
		// started.
		cfg := config.Default()
		cfg.MCP.Use = []string{"shell", "desktop"}
		dev, err = local.NewDevice(context.Background(), cfg, c.dirs[id], local.DeviceOptions{})
	} else if strings.HasPrefix(id, "sandbox") {
		sandboxtest.Require(t)
		cfg := config.Default()
		cfg.Device = config.DeviceSandbox
		dev, err = local.NewDevice(context.Background(), cfg, c.dirs[id], local.DeviceOptions{})
	} else {
		dev, err = client.New(context.Background(), []client.Server{
			{Namespace: "shell", Description: "Run shell commands on the device.", MCP: shell.New(shell.Options{Dir: c.dirs[id]})},
		}, client.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	stop := runDevice(t, c.http.URL, id, dev)
	c.mu.Lock()
	c.stops[id] = stop
	c.mu.Unlock()
}

// kill stops a device's client: its connection ends, its tools close.
func (c *cluster) kill(id string) {
	c.mu.Lock()
	stop := c.stops[id]
	c.mu.Unlock()
	stop()
}

// close stops every device, and with each the apps its desktop tools
// launched: a Mousepad left open on the shared desktop takes the next
// launch's file into its own process, whose window launch_app does not
// count as the launch's and waits out its timeout for.
func (c *cluster) close() {
	for id := range c.dirs {
		c.kill(id)
	}
}

func (c *cluster) read(device, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(c.dirs[device], file))
	return strings.TrimSpace(string(b)), err
}

func (c *cluster) orchestrator(t testing.TB, planner func(*Graph) (Stepper, error), opts Options) *Orchestrator {
	t.Helper()
	opts.Devices, opts.NewPlanner = ServerDevices{c.srv}, planner
	if opts.Store == nil {
		opts.Store = NewServerStore(c.st)
	}
	o, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// plannerFor is the constellation agent with a case's scripted model.
func plannerFor(t testing.TB, sc suiteCase, latency time.Duration) func(*Graph) (Stepper, error) {
	prom := loadPrompts(t)
	return func(*Graph) (Stepper, error) {
		return NewPlanner(PlannerOptions{Model: &ScriptedPlanner{Nodes: sc.Nodes, Latency: latency}, Prompts: prom,
			Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
	}
}

func checkCase(t testing.TB, c *cluster, sc suiteCase, g *Graph) {
	t.Helper()
	if g.Status != Completed {
		t.Errorf("%s: %s %s\n%s", sc.Name, g.Status, g.Error, g.Summary())
		// What the devices' agents did in the tasks that did not
		// complete, to tell why.
		for _, ti := range c.srv.Tasks() {
			if ti.Status != server.StatusCompleted {
				t.Logf("task %s %s: %s", ti.TaskName, ti.Status, ti.Error)
				for _, st := range ti.Steps {
					t.Logf("  step %s %s %s %.300s", st.Agent, st.Status, st.Error, st.Result)
				}
			}
		}
		return
	}
	for _, ch := range sc.Checks {
		if ch.HostAbsent != "" {
			if _, err := os.Lstat(ch.HostAbsent); err == nil {
				t.Errorf("%s: %s exists on this machine: the sandbox's root reached out", sc.Name, ch.HostAbsent)
			}
			continue
		}
		got, err := c.read(ch.Device, ch.File)
		if err != nil || got != ch.Equals {
			t.Errorf("%s: %s:%s = %q (%v), want %q", sc.Name, ch.Device, ch.File, got, err, ch.Equals)
		}
	}
}

// TestSuite runs the bundled cross-device suite: every case on a fresh
// set of three devices, through the constellation agent, the orchestrator
// and the agent server's task path, and checks each device's files.
func TestSuite(t *testing.T) {
	cases := loadSuite(t)
	if len(cases) < 20 {
		t.Fatalf("the suite has %d cases, want at least 20", len(cases))
	}
	for _, sc := range cases {
		t.Run(sc.Name, func(t *testing.T) {
			st := store.NewMemory()
			c := newCluster(t, st, 0, sc.devices()...)
			rec := t.TempDir()
			o := c.orchestrator(t, plannerFor(t, sc, 0), Options{MaxConcurrent: 8, Record: RecordTo(rec)})
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			g, err := o.Run(ctx, "suite case "+sc.Name)
			if err != nil {
				t.Fatal(err)
			}
			checkCase(t, c, sc, g)
			// Each node's tasks: one per attempt, never two for one.
			tasks := map[string]int{}
			for _, ti := range c.srv.Tasks() {
				tasks[ti.TaskName]++
			}
			for k, n := range tasks {
				if n != 1 {
					t.Errorf("%s ran %d times", k, n)
				}
			}
			replayFile(t, filepath.Join(rec, g.ID+".jsonl"), g)
		})
	}
}

func replayFile(t testing.TB, path string, g *Graph) {
	t.Helper()
	events := readRecordingFile(t, path)
	versions, err := Replay(events)
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if d := diff(versions[len(versions)-1], g); d != "" {
		t.Fatalf("the replay ends elsewhere: %s", d)
	}
	var nodeRecords int
	for _, e := range events {
		if e.Kind == "node_end" && e.Outcome != nil && len(e.Outcome.Record) > 0 {
			nodeRecords++
		}
	}
	if nodeRecords == 0 {
		t.Fatal("the recording holds no node's task recording")
	}
}

// A device killed in the middle of its node: the node moves to another
// device with the app it needs and runs there once; its dependents get
// its result.
func TestDeviceKilledMidNode(t *testing.T) {
	c := newCluster(t, store.NewMemory(), 0, "linux1", "linux2", "linux3")
	// The node blocks on linux2 until the file "go" appears, which it
	// never does there; elsewhere it is there at once.
	for _, d := range []string{"linux1", "linux3"} {
		os.WriteFile(filepath.Join(c.dirs[d], "go"), nil, 0o644)
	}
	sc := suiteCase{Name: "killed", Nodes: []suiteNode{
		{ID: "work", Device: "linux2", Run: "while [ ! -f go ]; do sleep 0.02; done; echo ran >> marks.txt; echo 77"},
		{ID: "use", Device: "linux1", Run: "echo got-{{dep:work}} | tee use.txt", After: []string{"work"}},
	}}
	started := make(chan string, 10)
	o := c.orchestrator(t, plannerFor(t, sc, 0), Options{OnEvent: func(e Event) {
		if e.Kind == "node_task" {
			started <- e.Device
		}
	}})
	id, err := o.Start(context.Background(), "kill a device")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-started:
		if d != "linux2" {
			t.Fatalf("work started on %s", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("work did not start")
	}
	c.kill("linux2")
	g := wait(t, o, id)
	w := g.Node("work")
	if g.Status != Completed || w.Device == "linux2" || strings.Join(w.Lost, ",") != "linux2" {
		t.Fatalf("%s %s: %+v", g.Status, g.Error, w)
	}
	if got, _ := c.read("linux1", "use.txt"); got != "got-77" {
		t.Errorf("use.txt = %q", got)
	}
	total := 0
	for d := range c.dirs {
		s, _ := c.read(d, "marks.txt")
		total += strings.Count(s, "ran")
	}
	if total != 1 {
		t.Errorf("the node's command ran %d times, want once", total)
	}
}

// The server restarts in the middle of a graph: the next server, on the
// same store, resumes the constellation and the tasks it had started;
// nothing runs twice.
func TestServerRestartMidGraph(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := newCluster(t, st, 0, "linux1", "linux2", "linux3")
	gate := filepath.Join(t.TempDir(), "gate")
	sc := suiteCase{Name: "restart", Nodes: []suiteNode{
		{ID: "a", Device: "linux1", Run: "echo a >> marks.txt; echo 1"},
		{ID: "b", Device: "linux2", Run: fmt.Sprintf("while [ ! -f %s ]; do sleep 0.02; done; echo b >> marks.txt; echo 2", gate)},
		{ID: "c", Device: "linux3", Run: "echo c >> marks.txt; expr {{dep:a}} + {{dep:b}} | tee c.txt", After: []string{"a", "b"}},
	}}
	events := make(chan Event, 100)
	o1 := c.orchestrator(t, plannerFor(t, sc, 0), Options{OnEvent: func(e Event) { events <- e }})
	id, err := o1.Start(context.Background(), "restart mid-graph")
	if err != nil {
		t.Fatal(err)
	}
	// a has ended and b runs: stop here.
	aDone, bStarted := false, false
	for !aDone || !bStarted {
		select {
		case e := <-events:
			aDone = aDone || (e.Kind == "node_end" && e.Node == "a")
			bStarted = bStarted || (e.Kind == "node_task" && e.Node == "b")
		case <-time.After(20 * time.Second):
			t.Fatal("a did not end or b did not start")
		}
	}
	o1.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.srv.Suspend(ctx); err != nil {
		t.Fatal(err)
	}
	// The devices come back to the next server; however slow the machine,
	// within their away time (a device that does not is another test's).
	c.away = time.Minute
	c.startServer()
	o2 := c.orchestrator(t, plannerFor(t, sc, 0), Options{})
	if ids, err := o2.Resume(context.Background()); err != nil || len(ids) != 1 {
		t.Fatalf("resumed %v: %v", ids, err)
	}
	os.WriteFile(gate, nil, 0o644)
	g := wait(t, o2, id)
	checkCase(t, c, suiteCase{Name: "restart", Checks: []suiteCheck{{Device: "linux3", File: "c.txt", Equals: "3"}}}, g)
	for d, want := range map[string]string{"linux1": "a", "linux2": "b", "linux3": "c"} {
		if got, _ := c.read(d, "marks.txt"); got != want {
			t.Errorf("%s ran %q, want %q once", d, got, want)
		}
	}
}

// The private desktop the desktop devices of this test binary share. One
// for the whole binary, not one per cluster: the benchmark builds a
// cluster per case and keeps each until it ends, and a desktop started
// while another's environment was set for the process (its session bus,
// runtime folder and AT-SPI bus) never got its AT-SPI registry up.
var desktop struct {
	once sync.Once
	s    *desktoptest.Session
	err  error
}

// sharedDesktop starts the shared desktop the first time and points this
// process's environment at it (the devices' desktop tools read it there);
// TestMain stops it.
func sharedDesktop(t testing.TB) {
	t.Helper()
	desktop.once.Do(func() {
		desktop.s, desktop.err = desktoptest.New(context.Background(), display.Xvfb)
		if desktop.err != nil {
			return
		}
		for _, kv := range desktop.s.Env {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	})
	if desktop.err != nil {
		t.Fatal(desktop.err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if desktop.s != nil {
		desktop.s.Close()
	}
	os.Exit(code)
}

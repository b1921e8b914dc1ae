package constellation

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/strategy"
)

// EvalRunner runs the eval cases that target a constellation
// (evals.Options.Constellations): each trial is an agent server on
// loopback with the case's devices connected over WebSockets as `saucer
// client` connects, each built from the trial's config as `saucer client`
// builds its own (local.NewDevice: the apps of mcp.use, mcp.policy, the
// tools' settings and timeouts, device: sandbox) in a fresh directory,
// the constellation agent playing the case's plan and the devices' agents
// running each node's command (scripted, each call taking the case's
// latency). The constellation is recorded in the trial's directory and
// replayed offline there; the devices stay up for their checks. It also
// replays the constellation recordings eval cases name (their recorded
// device).
type EvalRunner struct {
	// Prompts are the agents' templates; nil means the built-in ones.
	Prompts *prompts.Set
}

var _ evals.ConstellationRunner = EvalRunner{}

const evalToken = "eval-constellation"

// RunConstellation runs one trial of run.Case.
func (e EvalRunner) RunConstellation(ctx context.Context, run evals.ConstellationRun) (*evals.ConstellationTrial, error) {
	c, dir, cfg := run.Case, run.Dir, run.Config
	if c.Constellation == nil {
		return nil, fmt.Errorf("case %s does not target a constellation (it has no constellation:)", c.ID)
	}
	if cfg == nil {
		cfg = config.Default()
	}
	k := c.Constellation
	prom := e.Prompts
	if prom == nil {
		var err error
		if prom, err = prompts.Load(""); err != nil {
			return nil, err
		}
	}
	var closers []func()
	trial := &evals.ConstellationTrial{Devices: map[string]dispatcher.Executor{}, Recording: "constellation.jsonl"}
	trial.Close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*evals.ConstellationTrial, error) {
		trial.Close()
		return nil, err
	}
	agents := &ScriptedAgents{Latency: k.Latency.D()}
	srv, err := server.New(server.Options{Token: evalToken, AwayTimeout: 10 * time.Second, Logf: func(string, ...any) {},
		NewSession: func(spec server.SessionSpec) (server.Runner, error) {
			// The device as it registered, its id among them: a node's
			// agents know which of the devices they work on.
			return agent.New(agent.Options{Model: spec.WrapModel(agents), Dispatcher: spec.Dispatcher, Prompts: prom, Device: spec.Device,
				AppDescriptions: spec.AppDescriptions, Observer: spec.Observer, Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
		}})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	closers = append(closers, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx, "the trial is over")
		hs.Close()
	})
	url := "ws://" + ln.Addr().String() + "/ws"
	for _, d := range k.Devices {
		exec, stop, err := evalDevice(ctx, cfg, local.DeviceOptions{Extra: run.Extra}, url, filepath.Join(dir, "devices", d.ID), d)
		if err != nil {
			return fail(fmt.Errorf("device %s: %w", d.ID, err))
		}
		closers = append(closers, stop)
		trial.Devices[d.ID] = exec
	}
	planner := &ScriptedPlanner{Nodes: k.Plan, Latency: k.Latency.D()}
	o, err := New(Options{Devices: ServerDevices{srv}, Record: RecordTo(dir), NewID: func() string { return "constellation" },
		NewPlanner: func(*Graph) (Stepper, error) {
			return NewPlanner(PlannerOptions{Model: planner, Prompts: prom, Limits: strategy.Limits{RetryBackoff: time.Millisecond}})
		}})
	if err != nil {
		return fail(err)
	}
	g, err := o.Run(ctx, c.Task)
	if g == nil {
		return fail(err)
	}
	trial.Completed, trial.Status = g.Status == Completed, string(g.Status)
	trial.Answer = g.Answer
	if !trial.Completed {
		trial.Answer = g.Error
	}
	trial.Nodes, trial.ModelCalls = o.Stats().NodesRun, int(planner.calls.Load()+agents.calls.Load())
	trial.Graph = evalNodes(g)
	trial.Replay = replayCheck(filepath.Join(dir, "constellation.jsonl"), g)
	return trial, nil
}

// ReplayConstellation replays a constellation's recording offline (an
// eval case's recorded device): how the replayed constellation ended,
// and where the replay parts from the recording, if it does.
func (EvalRunner) ReplayConstellation(ctx context.Context, recording string) (*evals.ConstellationTrial, error) {
	r, err := ReplayFile(recording)
	if err != nil {
		return nil, err
	}
	trial := &evals.ConstellationTrial{Recording: r.File}
	switch {
	case r.Divergence != nil:
		trial.Replay = r.Divergence.Error()
	case !r.Ended:
		trial.Replay = "the recording stops before the constellation's end (a server that stopped, a crash): it replays only up to there"
	}
	g := r.Final
	if g == nil {
		return trial, nil
	}
	trial.Completed, trial.Status, trial.Answer = g.Status == Completed, string(g.Status), g.Answer
	if !trial.Completed && g.Error != "" {
		trial.Answer = g.Error
	}
	for _, e := range r.Events {
		if e.Kind == "node_start" {
			trial.Nodes++
		}
	}
	trial.Graph = evalNodes(g)
	return trial, nil
}

// replayCheck replays a constellation's recording offline and says where
// it parts from the recording, or from the graph the run ended with (""
// when it does not).
func replayCheck(path string, g *Graph) string {
	r, err := ReplayFile(path)
	switch {
	case err != nil:
		return err.Error()
	case r.Divergence != nil:
		return r.Divergence.Error()
	case r.Final == nil:
		return "the recording holds no graph"
	}
	return diff(r.Final, g)
}

// evalDevice connects a device to the server at url: d's files in dir,
// and the device built there from cfg as `saucer client` builds its own
// (local.NewDevice), with opts' extra servers beside the configured ones. It
// returns the device for the checks.
func evalDevice(ctx context.Context, cfg *config.Config, opts local.DeviceOptions, url, dir string, d evals.ConstellationDevice) (dispatcher.Executor, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	for name, content := range d.Files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return nil, nil, fmt.Errorf("file %q is outside the device's directory", name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, nil, err
		}
	}
	dev, err := local.NewDevice(ctx, cfg, dir, opts)
	if err != nil {
		return nil, nil, err
	}
	// On loopback a registration answers in milliseconds: a short wait
	// for it keeps the server's wait for a lost device (its away time
	// plus the reconnection wait the device declares) near 15 s.
	stop, err := local.Attach(ctx, dev, url, evalToken, d.ID, local.AttachOptions{MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond, RegisterTimeout: 5 * time.Second})
	if err != nil {
		return nil, nil, err
	}
	return dev, stop, nil
}

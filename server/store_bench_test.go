package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/cputime"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/storetest"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
)

// benchSteps is how many steps a benchmark task takes: each asks the
// model, runs one command on the device and reports a step, so each
// writes the task's record and three journal entries.
const benchSteps = 3

// stepsRunner runs benchSteps steps through the task's journaled model
// and dispatcher, as agents would.
var stepsRunner = gatedRunner(benchSteps, 0, nil, nil)

// gatedRunner runs steps steps of one command each; the first time a
// task has run pause of them (0: never) it tells paused and waits (as
// agents thinking) for resume (nil: never) or its own end. A task that
// ends while it waits fails with the cause.
func gatedRunner(steps, pause int, paused chan<- struct{}, resume <-chan struct{}) func(server.SessionSpec) (server.Runner, error) {
	var once sync.Once
	return func(spec server.SessionSpec) (server.Runner, error) {
		model := benchModel(spec)
		return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
			for step := 1; step <= steps; step++ {
				if err := benchStep(ctx, spec, model, step); err != nil {
					return &agent.Outcome{Status: fsm.Fail, Err: err}
				}
				if step == pause {
					stopped := false
					once.Do(func() {
						paused <- struct{}{}
						select {
						case <-resume:
						case <-ctx.Done():
							stopped = true
						}
					})
					if stopped {
						return &agent.Outcome{Status: fsm.Fail, Err: context.Cause(ctx)}
					}
				}
			}
			return &agent.Outcome{Status: fsm.Finish, Answer: "done"}
		}), nil
	}
}

// benchModel is an instant model that always says "click", journaled as
// the server wraps it.
func benchModel(spec server.SessionSpec) llm.Model {
	return slowModel(spec, 0, nil)
}

// slowModel is benchModel taking latency for each reply; answered, when
// it is not nil, is told when the reply comes (before the server
// journals it).
func slowModel(spec server.SessionSpec, latency time.Duration, answered func()) llm.Model {
	var model llm.Model = scripted.New(scripted.Script{Loop: true, Replies: []scripted.Reply{{Text: "click", Latency: latency}}})
	if answered != nil {
		model = stamped{model, answered}
	}
	if spec.WrapModel != nil {
		model = spec.WrapModel(model)
	}
	return model
}

// stamped is a model that tells when each reply comes.
type stamped struct {
	llm.Model
	answered func()
}

func (m stamped) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := m.Model.Complete(ctx, req)
	m.answered()
	return resp, err
}

// benchStep is one step as agents take it: it asks the model, runs one
// command on the device and reports the step.
func benchStep(ctx context.Context, spec server.SessionSpec, model llm.Model, step int) error {
	if _, err := model.Complete(ctx, &llm.Request{Messages: []llm.Message{llm.User("next")}}); err != nil {
		return err
	}
	res := spec.Dispatcher.Execute(ctx, []command.Command{benchCommand})
	if !res[0].OK() {
		return errors.New(res[0].Error)
	}
	spec.Observer(agent.Event{Kind: agent.EventStep, Agent: "bench", Step: step, Commands: []command.Command{benchCommand}, Results: res})
	return nil
}

// storeServer is a server on st with n connected no-op devices, whose
// tasks run runner.
func storeServer(b testing.TB, st store.Store, n int, runner func(server.SessionSpec) (server.Runner, error)) (*server.Server, func()) {
	s, err := server.New(server.Options{Token: token, NewSession: runner, Store: st, MaxTasks: 10000, KeepTasks: 100000})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		c, err := remote.New(noopDevice{}, remote.Options{URL: url, Token: token, ClientID: fmt.Sprintf("dev%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); c.Run(ctx) }()
		<-c.Connected()
	}
	return s, func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		s.Shutdown(sctx, "benchmark over")
		cancel()
		wg.Wait()
		hs.Close()
	}
}

// runTasks runs total tasks spread over n devices (each runs its own one
// after another) and returns tasks/s and the tasks' latencies, sorted.
func runTasks(b *testing.B, s *server.Server, n, total int) (float64, []time.Duration) {
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for d := range n {
		count := total / n
		if d < total%n {
			count++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("dev%d", d)
			for range count {
				t0 := time.Now()
				info, err := s.Dispatch(id, "bench", "bench", "bench")
				for errors.Is(err, server.ErrBusy) { // the previous task is freeing its slot
					time.Sleep(50 * time.Microsecond)
					info, err = s.Dispatch(id, "bench", "bench", "bench")
				}
				if err != nil {
					b.Error(err)
					return
				}
				// As a client of the API would (GET /api/tasks/{id}?wait=),
				// not by polling, which would spend the CPU being measured.
				got, err := s.Wait(context.Background(), info.ID)
				if err != nil || got.Status != server.StatusCompleted {
					b.Errorf("task %s: %s %s %v", got.ID, got.Status, got.Error, err)
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	rate := float64(total) / time.Since(start).Seconds()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return rate, lat
}

func pct(lat []time.Duration, p float64) float64 {
	if len(lat) == 0 {
		return 0
	}
	return float64(lat[int(float64(len(lat)-1)*p)].Microseconds()) / 1000
}

// BenchmarkTaskStores: tasks/s and p50/p95 task latency with 1, 10 and 50
// devices, each task three steps of a model call and a command round, with
// the SQLite and PostgreSQL stores against two memory baselines, in the
// same run:
//   - memory: the memory store as the server runs it, which writes
//     nothing to it (nothing can resume from it); sqlite-x and postgres-x
//     are the ratios of their tasks/s to its rate;
//   - journaled: the memory store written to as the durable ones are
//     (every record and journal entry, through the same server code);
//     sqlite-jx and postgres-jx are the ratios to its rate, which is what
//     the database itself costs.
func BenchmarkTaskStores(b *testing.B) {
	pg := storetest.Postgres(b)
	kinds := []string{"memory", "journaled", "sqlite", "postgres"}
	// SAUCER_BENCH_KINDS=sqlite runs some of them (to profile one).
	if k := os.Getenv("SAUCER_BENCH_KINDS"); k != "" {
		kinds = strings.Split(k, ",")
	}
	for _, n := range []int{1, 10, 50} {
		b.Run(fmt.Sprintf("devices=%d", n), func(b *testing.B) {
			total := max(b.N, n)
			// The stores take turns, storeRounds times, and each figure is
			// the median of its rounds: a machine that slows down for a
			// moment then weighs on one round of each, not on one store.
			rates := map[string][]float64{}
			lats := map[string][]time.Duration{}
			b.StopTimer() // only the tasks count, not starting and stopping servers
			for range storeRounds {
				for _, kind := range kinds {
					st := benchStore(b, kind, pg)
					s, stop := storeServer(b, st, n, stepsRunner)
					b.StartTimer()
					rate, lat := runTasks(b, s, n, total)
					b.StopTimer()
					stop()
					st.Close()
					rates[kind] = append(rates[kind], rate)
					lats[kind] = append(lats[kind], lat...)
				}
			}
			ratio := func(of, to string) float64 {
				var r []float64
				if len(rates[to]) == 0 || len(rates[of]) == 0 {
					return 0
				}
				for i := range rates[of] {
					r = append(r, rates[of][i]/rates[to][i])
				}
				return median(r)
			}
			for _, kind := range kinds {
				sort.Slice(lats[kind], func(i, j int) bool { return lats[kind][i] < lats[kind][j] })
				b.ReportMetric(median(rates[kind]), kind+"-tasks/s")
				b.ReportMetric(pct(lats[kind], 0.50), kind+"-p50-ms")
				b.ReportMetric(pct(lats[kind], 0.95), kind+"-p95-ms")
			}
			b.ReportMetric(ratio("sqlite", "memory"), "sqlite-x")
			b.ReportMetric(ratio("postgres", "memory"), "postgres-x")
			b.ReportMetric(ratio("sqlite", "journaled"), "sqlite-jx")
			b.ReportMetric(ratio("postgres", "journaled"), "postgres-jx")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// storeRounds is how many times BenchmarkTaskStores runs each store.
const storeRounds = 3

// benchStore opens a fresh store of a kind BenchmarkTaskStores compares.
func benchStore(b *testing.B, kind, pg string) store.Store {
	switch kind {
	case "memory":
		return store.NewMemory()
	case "journaled":
		return journaling{store.NewMemory()}
	case "sqlite":
		st, err := store.Open(context.Background(), "sqlite:"+filepath.Join(b.TempDir(), "bench.db"))
		if err == nil {
			err = st.(*store.SQL).Lock(context.Background()) // as saucer serve holds it
		}
		if err != nil {
			b.Fatal(err)
		}
		return st
	}
	st, err := store.Open(context.Background(), pg)
	if err == nil { // a fresh database per run
		_, err = st.(*store.SQL).DB().Exec(`TRUNCATE tasks, journal, devices, outbox`)
	}
	if err != nil {
		b.Fatal(err)
	}
	return st
}

func median(v []float64) float64 {
	s := append([]float64{}, v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// journaling is a memory store the server does not recognise as one, so
// it writes to it everything it writes to a durable store.
type journaling struct{ store.Store }

// BenchmarkRoundOverhead: what the store adds to a command round, with
// 1, 10 and 50 devices, each running tasks of overheadSteps steps (a
// model call, a command round, the step reported) one after another, on
// a no-op device on loopback. Two models:
//   - model=0s answers at once: the devices keep the server as busy as
//     it can be (with 50 of them, more than two cores can serve), the
//     worst case for the store;
//   - model=100ms takes a tenth of a second, as real models take
//     hundreds of milliseconds: what a round costs a server at work.
//
// Figures, in ms, over storeRounds runs of each store taking turns:
//   - wait-p50-ms, wait-p95-ms: how long a round waits for the SQLite
//     store (its command frame is in the journal before it is sent);
//   - memory-p50-ms, memory-p95-ms, sqlite-p50-ms, sqlite-p95-ms: a
//     step's time after the model's reply (the reply journaled, the
//     round, the step reported), on the memory store, which the server
//     does not write at all, and on SQLite;
//   - overhead-p50-ms, overhead-p95-ms: SQLite's step time minus
//     memory's, at each percentile: everything a round spends because of
//     the store, encoding what it writes included;
//   - memory-cpu-us, sqlite-cpu-us: the process's CPU time per round
//     (server and devices, one process), and store-cpu-us, SQLite's
//     minus memory's: what the store costs a round in CPU, which on a
//     machine that others keep busy decides its latency.
//
// The goal is a wait-p95 of at most 2 ms with 10 devices. A run that
// gives the slow model enough rounds:
//
//	go test -run '^$' -bench 'RoundOverhead/model=100ms' -benchtime 30x ./server/
func BenchmarkRoundOverhead(b *testing.B) {
	for _, latency := range []time.Duration{0, 100 * time.Millisecond} {
		for _, n := range []int{1, 10, 50} {
			b.Run(fmt.Sprintf("model=%s/devices=%d", latency, n), func(b *testing.B) {
				roundOverhead(b, latency, n)
			})
		}
	}
}

func roundOverhead(b *testing.B, latency time.Duration, n int) {
	tasks := max(b.N, n)
	steps := map[string]*durations{"memory": {}, "sqlite": {}}
	cpu := map[string]time.Duration{}
	waits := &durations{}
	b.StopTimer() // only the tasks count, not starting and stopping servers
	for range storeRounds {
		for _, kind := range []string{"memory", "sqlite"} {
			st := benchStore(b, kind, "")
			run := st
			if kind == "sqlite" {
				run = waitTimer{Store: st, waits: waits}
			}
			s, stop := storeServer(b, run, n, timedRunner(overheadSteps, latency, steps[kind]))
			b.StartTimer()
			c0 := cputime.Process()
			runTasks(b, s, n, tasks)
			cpu[kind] += cputime.Process() - c0
			b.StopTimer()
			stop()
			st.Close()
		}
	}
	mem, sq, w := steps["memory"].sorted(), steps["sqlite"].sorted(), waits.sorted()
	perRound := func(kind string) float64 {
		return float64(cpu[kind].Microseconds()) / float64(len(steps[kind].list))
	}
	b.ReportMetric(perRound("memory"), "memory-cpu-us")
	b.ReportMetric(perRound("sqlite"), "sqlite-cpu-us")
	b.ReportMetric(perRound("sqlite")-perRound("memory"), "store-cpu-us")
	b.ReportMetric(pct(w, 0.50), "wait-p50-ms")
	b.ReportMetric(pct(w, 0.95), "wait-p95-ms")
	b.ReportMetric(pct(mem, 0.50), "memory-p50-ms")
	b.ReportMetric(pct(mem, 0.95), "memory-p95-ms")
	b.ReportMetric(pct(sq, 0.50), "sqlite-p50-ms")
	b.ReportMetric(pct(sq, 0.95), "sqlite-p95-ms")
	b.ReportMetric(pct(sq, 0.50)-pct(mem, 0.50), "overhead-p50-ms")
	b.ReportMetric(pct(sq, 0.95)-pct(mem, 0.95), "overhead-p95-ms")
	b.ReportMetric(0, "ns/op")
}

// overheadSteps is how many steps a BenchmarkRoundOverhead task takes.
const overheadSteps = 10

// timedRunner runs steps steps of one command each, with a model that
// takes latency, adding each step's time after the model's reply to d.
func timedRunner(steps int, latency time.Duration, d *durations) func(server.SessionSpec) (server.Runner, error) {
	return func(spec server.SessionSpec) (server.Runner, error) {
		var replied time.Time
		model := slowModel(spec, latency, func() { replied = time.Now() })
		return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
			for step := 1; step <= steps; step++ {
				if err := benchStep(ctx, spec, model, step); err != nil {
					return &agent.Outcome{Status: fsm.Fail, Err: err}
				}
				d.add(time.Since(replied))
			}
			return &agent.Outcome{Status: fsm.Finish, Answer: "done"}
		}), nil
	}
}

// durations collects times from several goroutines.
type durations struct {
	mu   sync.Mutex
	list []time.Duration
}

func (d *durations) add(t time.Duration) {
	d.mu.Lock()
	d.list = append(d.list, t)
	d.mu.Unlock()
}

// sorted is what was collected, shortest first.
func (d *durations) sorted() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := slices.Clone(d.list)
	slices.Sort(out)
	return out
}

// waitTimer is a store that times the journal writes the server waits
// for: one per command round, its frame, before the frame is sent.
type waitTimer struct {
	store.Store
	waits *durations
}

func (w waitTimer) Append(ctx context.Context, taskID string, e store.Entry, wait bool) error {
	if !wait {
		return w.Store.Append(ctx, taskID, e, wait)
	}
	t0 := time.Now()
	err := w.Store.Append(ctx, taskID, e, wait)
	w.waits.add(time.Since(t0))
	return err
}

// BenchmarkRecovery: a server starts on an SQLite store that an earlier
// process left with 1,000 running tasks (one step done each, journaled)
// on 100 devices; the devices connect; the time until every task has
// resumed, replayed its journal and completed its remaining steps.
func BenchmarkRecovery(b *testing.B) {
	const tasks, devices = 1000, 100
	for range b.N {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), "recovery.db")
		st, err := store.Open(context.Background(), "sqlite:"+path)
		if err != nil {
			b.Fatal(err)
		}
		seedRunning(b, st, tasks, devices)
		b.StartTimer()
		start := time.Now()
		if err := st.(*store.SQL).Lock(context.Background()); err != nil { // as saucer serve does
			b.Fatal(err)
		}
		s, stop := storeServer(b, st, devices, stepsRunner)
		for i := range tasks {
			if t, err := s.Wait(context.Background(), fmt.Sprintf("task-%04d", i)); err != nil || t.Status != server.StatusCompleted {
				b.Fatalf("task %s: %s %s %v", t.ID, t.Status, t.Error, err)
			}
		}
		elapsed := time.Since(start)
		b.StopTimer()
		stop()
		st.Close()
		b.ReportMetric(float64(elapsed.Milliseconds()), "recovery-ms")
		b.ReportMetric(float64(elapsed.Microseconds())/tasks, "us/task")
		b.StartTimer()
	}
}

// seedRunning writes what a server killed in the middle of its tasks
// leaves: running tasks whose journals hold their first step, its
// results with their command's final state as this server writes them.
func seedRunning(b testing.TB, st store.Store, tasks, devices int) {
	seed(b, st, tasks, devices, false)
}

// seedOlder is seedRunning as a server wrote journals before results
// entries carried their commands' states: the results alone, an array.
func seedOlder(b testing.TB, st store.Store, tasks, devices int) {
	seed(b, st, tasks, devices, true)
}

func seed(b testing.TB, st store.Store, tasks, devices int, older bool) {
	ctx := context.Background()
	reply, _ := json.Marshal(llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "click"}})
	for i := range tasks {
		id := fmt.Sprintf("task-%04d", i)
		dev := fmt.Sprintf("dev%d", i%devices)
		info := server.TaskInfo{ID: id, ClientID: dev, TaskName: "bench", Request: "bench", Status: server.StatusRunning,
			QueuedBy: "bench", CreatedAt: time.Now().UTC(), Steps: []server.StepInfo{}}
		data, _ := json.Marshal(info)
		if err := st.PutTask(ctx, store.Task{ID: id, ClientID: dev, Status: "running", CreatedAt: info.CreatedAt, Data: data}, true); err != nil {
			b.Fatal(err)
		}
		cmd := benchCommand
		cmd.CallID = id + "-c1"
		frame, _ := json.Marshal(map[string]any{"type": "command", "status": "continue", "session_id": id, "response_id": id + "-r1",
			"actions": []command.Command{cmd}})
		res := []command.Result{{Status: command.Success, CallID: cmd.CallID, Result: json.RawMessage(`{"clicked":true}`)}}
		results, _ := json.Marshal(res)
		if !older {
			now := time.Now().UTC()
			results, _ = json.Marshal(map[string]any{"results": res, "states": []dispatcher.CommandState{{CallID: cmd.CallID,
				ToolName: cmd.ToolName, ResponseID: id + "-r1", State: command.StateCompleted, CreatedAt: now, ExpiresAt: now.Add(time.Minute),
				UpdatedAt: now, QueuedBy: "bench"}}})
		}
		type k struct { // as the server keys a round: its commands without call ids
			Tool, NS string
			Type     command.ToolType
			Params   map[string]any
		}
		key, _ := json.Marshal([]k{{cmd.ToolName, cmd.Namespace, cmd.ToolType, cmd.Parameters}})
		for seq, e := range []store.Entry{{Kind: "model", Data: reply}, {Kind: "round", Key: string(key), Data: frame}, {Kind: "results", Key: id + "-r1", Data: results}} {
			e.Seq = seq + 1
			if err := st.Append(ctx, id, e, true); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLongTask: the cost of a command round on the SQLite store in a
// task of 100 steps and in one of 1,000 (us/round, the task's time over
// its steps): a round costs the same however long the task has run, since
// its record keeps only the latest steps and commands.
func BenchmarkLongTask(b *testing.B) {
	for _, steps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			st := sqliteStore(b)
			s, err := server.New(server.Options{Token: token, NewSession: gatedRunner(steps, 0, nil, nil), Store: st})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptest.NewServer(s.Handler())
			defer hs.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c, err := remote.New(noopDevice{}, remote.Options{URL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", Token: token, ClientID: "dev"})
			if err != nil {
				b.Fatal(err)
			}
			go c.Run(ctx)
			<-c.Connected()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				info, err := s.Dispatch("dev", "long", "long", "bench")
				if err != nil {
					b.Fatal(err)
				}
				if got, _ := s.Wait(context.Background(), info.ID); got.Status != server.StatusCompleted {
					b.Fatalf("task: %s %s", got.Status, got.Error)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*steps), "us/round")
			b.StopTimer()
			sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer scancel()
			s.Shutdown(sctx, "benchmark over")
		})
	}
}

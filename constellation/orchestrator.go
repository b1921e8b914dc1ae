package constellation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/fsm"
)

// Devices is where nodes run: the devices of this server, or of an AIP
// server reached as a constellation client.
type Devices interface {
	// List returns the devices connected now.
	List(ctx context.Context) ([]Device, error)
	// Start starts task on device and returns the task's id. key names
	// the attempt: a second Start with the same key (after a restart that
	// lost the first answer) returns the task the first one started, so
	// that nothing runs twice.
	Start(ctx context.Context, device, key, task string) (taskID string, err error)
	// Wait waits for a task to end. An error means the wait itself failed
	// (ctx ended, the server stopped), not the task.
	Wait(ctx context.Context, taskID string) (TaskOutcome, error)
}

// TaskOutcome is how a node's device task ended.
type TaskOutcome struct {
	OK     bool   `json:"ok"`
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	// DeviceLost says the device went away during the task: the node is
	// moved to another device rather than counted as failed.
	DeviceLost bool `json:"device_lost,omitempty"`
	// NoDevice says the node never started: its device did not connect
	// within the wait and no other device of its kind was connected. The
	// node fails without a retry.
	NoDevice bool `json:"no_device,omitempty"`
	// Record is the task's own recording (a server's task with its steps
	// and commands), kept in the constellation's recording.
	Record json.RawMessage `json:"record,omitempty"`
}

// Stepper is the planner as the orchestrator drives it; *Planner is one,
// and so is a recording's replay. Step is given a copy of the graph, and
// runs while the constellation goes on: what it changes on the copy is
// not kept. Its result's Edits (each with its Op and Args) are what the
// orchestrator applies, checked against the graph as it is when the step
// answers.
type Stepper interface {
	Step(ctx context.Context, g *Graph, devices []Device, events []string) (StepResult, error)
}

// Store keeps constellations where a restarted server finds them.
type Store interface {
	Save(ctx context.Context, g *Graph) error
	Load(ctx context.Context, id string) (*Graph, error)
	List(ctx context.Context) ([]*Graph, error)
}

// Defaults of Options.
const (
	DefaultMaxConcurrent = 8
	DefaultPerDevice     = 1
	DefaultDeviceWait    = 2 * time.Minute
)

// Options configure an Orchestrator. Devices and NewPlanner are required.
type Options struct {
	Devices Devices
	// NewPlanner makes the planner of a constellation (a new one for a
	// resumed constellation: it sees the graph as it stands).
	NewPlanner func(g *Graph) (Stepper, error)
	// Store keeps the graphs; nil keeps them in memory only.
	Store Store
	// Record, when set, opens the recording of a constellation.
	Record func(id string) (Recorder, error)
	// MaxConcurrent bounds the nodes running at once over all
	// constellations; PerDevice bounds them on one device (nodes beyond
	// wait in the device's queue, first come first served).
	MaxConcurrent, PerDevice int
	// ReviewBeforeStart makes the nodes a batch of ends unblocks wait for
	// the planner's step on that batch, so that it may edit them first.
	// By default they start at once and the planner's step runs beside
	// them (it edits what has not started).
	ReviewBeforeStart bool
	// Allowed names the devices constellations may use; empty means all.
	Allowed []string
	// Bounds limit a graph's size and a planner reply's edits.
	Bounds Bounds
	// DeviceWait is how long a node waits for its device to connect (a
	// device reconnecting after a restart, say) before it moves to
	// another device of the same kind, or fails when there is none;
	// DefaultDeviceWait when zero.
	DeviceWait time.Duration
	// OnEvent, when set, is told of every change (for an event stream).
	// Calls are serialized per constellation.
	OnEvent func(Event)
	// NewID makes constellation ids.
	NewID func() string
	// Now is the clock for timestamps; nil means time.Now.
	Now func() time.Time
}

// Event is a change of a constellation, as the API streams it.
type Event struct {
	Constellation string       `json:"constellation"`
	Kind          string       `json:"kind"` // graph, node_start, node_end, planner, end
	Version       int          `json:"version"`
	Node          string       `json:"node,omitempty"`
	Device        string       `json:"device,omitempty"`
	Status        string       `json:"status,omitempty"`
	Edits         []Edit       `json:"edits,omitempty"`
	Events        []string     `json:"events,omitempty"`
	Graph         *Graph       `json:"graph,omitempty"`
	Outcome       *TaskOutcome `json:"outcome,omitempty"`
	// Attempt numbers a node's attempt; Sent is the task text it was sent
	// (node_start); TaskID its device task (node_task); MovedTo the device
	// a lost device's node moved to (node_end).
	Attempt int    `json:"attempt,omitempty"`
	Sent    string `json:"sent,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
	MovedTo string `json:"moved_to,omitempty"`
	// Answer is the planner's answer or reason (planner).
	Answer string    `json:"answer,omitempty"`
	Time   time.Time `json:"time"`
}

// Orchestrator runs constellations.
type Orchestrator struct {
	opts   Options
	global chan struct{}

	mu      sync.Mutex
	devSlot map[string]chan struct{}
	running map[string]*run
	// width is the nodes in flight now; widthArea integrates it over time
	// for the average parallel width.
	width, maxWidth int
	stats           Stats
	lastChange      time.Time
	// onWait, in tests, is told of a node that waits for a slot.
	onWait func(node string)
	// recheck is how often the device list is read again while a node
	// waits for its device.
	recheck time.Duration
	// subs are the event streams' listeners, by subscription.
	subs    map[int]func(Event)
	nextSub int
}

// Subscribe calls fn with every event of every constellation until the
// returned cancel is called. fn must not block: it runs in the
// constellation's loop.
func (o *Orchestrator) Subscribe(fn func(Event)) (cancel func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.subs == nil {
		o.subs = map[int]func(Event){}
	}
	o.nextSub++
	id := o.nextSub
	o.subs[id] = fn
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.subs, id)
	}
}

// Stats are the orchestrator's measures.
type Stats struct {
	// NodesRun counts device tasks started; MaxWidth is the most that ran
	// at once; WidthTime sums, over time, the nodes in flight (divide by
	// BusyTime for the average width while any ran).
	NodesRun  int
	MaxWidth  int
	WidthTime time.Duration
	BusyTime  time.Duration
}

// AverageWidth is the average number of nodes running at once while any
// ran.
func (s Stats) AverageWidth() float64 {
	if s.BusyTime <= 0 {
		return 0
	}
	return float64(s.WidthTime) / float64(s.BusyTime)
}

// New checks the options.
func New(opts Options) (*Orchestrator, error) {
	if opts.Devices == nil || opts.NewPlanner == nil {
		return nil, errors.New("constellation: Options.Devices and Options.NewPlanner are required")
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.PerDevice <= 0 {
		opts.PerDevice = DefaultPerDevice
	}
	if opts.Store == nil {
		opts.Store = NewMemoryStore()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DeviceWait <= 0 {
		opts.DeviceWait = DefaultDeviceWait
	}
	if opts.NewID == nil {
		var n int
		var mu sync.Mutex
		opts.NewID = func() string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("c%d-%d", time.Now().UnixNano(), n)
		}
	}
	return &Orchestrator{opts: opts, global: make(chan struct{}, opts.MaxConcurrent), devSlot: map[string]chan struct{}{},
		running: map[string]*run{}, recheck: time.Second}, nil
}

// Stats returns the measures so far.
func (o *Orchestrator) Stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tickLocked()
	s := o.stats
	s.MaxWidth = o.maxWidth
	return s
}

func (o *Orchestrator) tickLocked() {
	now := time.Now()
	if o.width > 0 && !o.lastChange.IsZero() {
		d := now.Sub(o.lastChange)
		o.stats.WidthTime += time.Duration(o.width) * d
		o.stats.BusyTime += d
	}
	o.lastChange = now
}

func (o *Orchestrator) inFlight(delta int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.tickLocked()
	o.width += delta
	if delta > 0 {
		o.stats.NodesRun++
	}
	o.maxWidth = max(o.maxWidth, o.width)
}

// Run plans and runs request to its end and returns the final graph.
func (o *Orchestrator) Run(ctx context.Context, request string) (*Graph, error) {
	id, err := o.Start(ctx, request)
	if err != nil {
		return nil, err
	}
	return o.Wait(ctx, id)
}

// Start creates a constellation and runs it in the background; Wait or
// Get follow it.
func (o *Orchestrator) Start(ctx context.Context, request string) (string, error) {
	if strings.TrimSpace(request) == "" {
		return "", errors.New("constellation: the request is empty: say what the devices must do")
	}
	g := &Graph{ID: o.opts.NewID(), Request: request, Status: Running, CreatedAt: o.opts.Now().UTC(), Nodes: []*Node{}, Edges: []Edge{}}
	if err := o.opts.Store.Save(ctx, g); err != nil {
		return "", fmt.Errorf("constellation: saving the new constellation: %w", err)
	}
	id := g.ID
	return id, o.launch(g)
}

// Resume continues the constellations a stopped orchestrator left
// running in the store, and returns their ids.
func (o *Orchestrator) Resume(ctx context.Context) ([]string, error) {
	gs, err := o.opts.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, g := range gs {
		if g.Status != Running {
			continue
		}
		o.mu.Lock()
		_, busy := o.running[g.ID]
		o.mu.Unlock()
		if busy {
			continue
		}
		if err := o.launch(g); err != nil {
			return ids, err
		}
		ids = append(ids, g.ID)
	}
	return ids, nil
}

func (o *Orchestrator) launch(g *Graph) error {
	planner, err := o.opts.NewPlanner(g)
	if err != nil {
		return fmt.Errorf("constellation: making the planner: %w", err)
	}
	r := &run{o: o, g: g, planner: planner, ends: make(chan nodeMsg, 16), done: make(chan struct{}), quit: make(chan struct{}),
		ending: make(chan struct{}), snap: g.Clone()}
	if o.opts.Record != nil {
		if r.rec, err = o.opts.Record(g.ID); err != nil {
			return fmt.Errorf("constellation: opening its recording: %w", err)
		}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r.cancel = cancel
	o.mu.Lock()
	o.running[g.ID] = r
	o.mu.Unlock()
	go r.loop(ctx)
	return nil
}

// Get returns a constellation as it stands.
func (o *Orchestrator) Get(ctx context.Context, id string) (*Graph, error) {
	o.mu.Lock()
	r := o.running[id]
	o.mu.Unlock()
	if r != nil {
		return r.snapshot(), nil
	}
	return o.opts.Store.Load(ctx, id)
}

// List returns the constellations in the store, newest first.
func (o *Orchestrator) List(ctx context.Context) ([]*Graph, error) {
	gs, err := o.opts.Store.List(ctx)
	if err != nil {
		return nil, err
	}
	for i, g := range gs {
		if live, err := o.Get(ctx, g.ID); err == nil {
			gs[i] = live
		}
	}
	slices.SortFunc(gs, func(a, b *Graph) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return gs, nil
}

// Wait waits for a constellation of this orchestrator to end (or ctx).
func (o *Orchestrator) Wait(ctx context.Context, id string) (*Graph, error) {
	o.mu.Lock()
	r := o.running[id]
	o.mu.Unlock()
	if r == nil {
		return o.opts.Store.Load(ctx, id)
	}
	select {
	case <-r.done:
		return r.snapshot(), r.err
	case <-ctx.Done():
		return r.snapshot(), context.Cause(ctx)
	}
}

// Stop stops every running constellation without ending it (as a server
// stopping for a restart does): nodes in flight are left to their devices'
// tasks and the store keeps the graphs, which Resume continues.
func (o *Orchestrator) Stop() {
	o.mu.Lock()
	rs := make([]*run, 0, len(o.running))
	for _, r := range o.running {
		rs = append(rs, r)
	}
	o.mu.Unlock()
	for _, r := range rs {
		r.stopping.Store(true)
		r.cancel(errStopped)
		<-r.done
	}
}

var errStopped = errors.New("the orchestrator stopped")

// Cancel ends a running constellation as cancelled.
func (o *Orchestrator) Cancel(id string) error {
	o.mu.Lock()
	r := o.running[id]
	o.mu.Unlock()
	if r == nil {
		return fmt.Errorf("constellation %q is not running", id)
	}
	r.cancel(errors.New("cancelled"))
	<-r.done
	return nil
}

// slot is the per-device queue: a node waits for its device's slot, then
// for a global one.
func (o *Orchestrator) slot(device string) chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.devSlot[device]
	if s == nil {
		s = make(chan struct{}, o.opts.PerDevice)
		o.devSlot[device] = s
	}
	return s
}

// devices lists the devices constellations may use now.
func (o *Orchestrator) devices(ctx context.Context) ([]Device, error) {
	ds, err := o.opts.Devices.List(ctx)
	if err != nil {
		return nil, err
	}
	if len(o.opts.Allowed) == 0 {
		return ds, nil
	}
	return slices.DeleteFunc(ds, func(d Device) bool { return !slices.Contains(o.opts.Allowed, d.ID) }), nil
}

// run is one constellation being run. Its loop owns the graph; node
// goroutines report to it on ends.
type run struct {
	o       *Orchestrator
	g       *Graph
	planner Stepper
	rec     Recorder
	ends    chan nodeMsg
	done    chan struct{}
	cancel  context.CancelCauseFunc
	err     error
	// stopping is set by Stop before it cancels: the loop leaves the
	// graph running in the store.
	stopping atomic.Bool
	// quit is closed when the loop no longer takes node messages.
	quit chan struct{}
	// ending is closed when the constellation ends: nodes still queued
	// for a slot then never start.
	ending  chan struct{}
	endOnce sync.Once

	smu  sync.Mutex
	snap *Graph

	inflight int
	// waiting counts the ready nodes that wait for their device.
	waiting int
	// reviewDue says a node that asked for review has completed since
	// the planner's last step.
	reviewDue bool
	nodeWG    sync.WaitGroup
	// planWG is the planner's step in flight, if any.
	planWG sync.WaitGroup
}

type nodeMsg struct {
	node, taskID string
	attempt      int
	started      bool // the task started (taskID known); not ended yet
	out          TaskOutcome
	err          error
}

func (r *run) snapshot() *Graph {
	r.smu.Lock()
	defer r.smu.Unlock()
	return r.snap.Clone()
}

// commit makes the graph's current state visible and durable.
func (r *run) commit(ctx context.Context) error {
	r.smu.Lock()
	r.snap = r.g.Clone()
	r.smu.Unlock()
	return r.o.opts.Store.Save(context.WithoutCancel(ctx), r.g)
}

func (r *run) emit(e Event) {
	e.Constellation, e.Version, e.Time = r.g.ID, r.g.Version, r.o.opts.Now().UTC()
	if r.rec != nil {
		r.rec.Record(e)
	}
	if r.o.opts.OnEvent != nil {
		r.o.opts.OnEvent(e)
	}
	r.o.mu.Lock()
	subs := make([]func(Event), 0, len(r.o.subs))
	for _, fn := range r.o.subs {
		subs = append(subs, fn)
	}
	r.o.mu.Unlock()
	for _, fn := range subs {
		fn(e)
	}
}

func (r *run) loop(ctx context.Context) {
	defer close(r.done)
	defer func() {
		r.nodeWG.Wait()
		r.planWG.Wait()
		if r.rec != nil {
			r.rec.Close()
		}
		r.o.mu.Lock()
		delete(r.o.running, r.g.ID)
		r.o.mu.Unlock()
	}()
	r.err = r.drive(ctx)
	if r.stopping.Load() {
		close(r.quit)
		return
	}
	r.end()
	close(r.quit)
	if r.err != nil && r.g.Status == Running {
		r.g.Status, r.g.Error = Failed, r.err.Error()
		if ctx.Err() != nil {
			r.g.Status = Cancelled
		}
	}
	r.endNodes()
	r.g.Version++
	if err := r.commit(ctx); err != nil && r.err == nil {
		r.err = err
	}
	r.emit(Event{Kind: "end", Status: string(r.g.Status), Graph: r.g.Clone()})
}

// drive is the loop's work: resume nodes in flight, ask the planner, start
// what is ready, take ends in batches, until the graph is over.
//
// The planner thinks on the side: its step runs in its own goroutine on a
// copy of the graph, while the loop goes on taking ends and starting the
// nodes they unblock. Its edits apply when it answers, each checked again
// against the graph as it is then; an edit the graph has moved past (a
// node that started meanwhile) is refused and the planner is told at its
// next step. Ends that arrive while it thinks are its next step's events.
func (r *run) drive(ctx context.Context) error {
	g := r.g
	r.emit(Event{Kind: "graph", Graph: g.Clone()})
	var events []string
	// Nodes left running by an earlier orchestrator: wait on their task
	// (or start it under the same key), never start it afresh.
	for _, n := range g.Nodes {
		if n.Status == NodeRunning {
			events = append(events, fmt.Sprintf("%s resumed after a restart (attempt %d on %s)", n.ID, n.Attempts, n.Device))
			r.launchNode(ctx, n)
		}
	}
	answers := make(chan planAnswer, 1)
	// planning says a step is in flight; refusedEdits that the planner's
	// last answer had edits the graph refused, which it must hear of.
	planning, refusedEdits := false, false
	// ownRefusals that the planner's last step had edits it refused
	// itself (its tool results said why): if they leave nothing that
	// can run, it is asked again rather than the constellation failed.
	ownRefusals := false
	// decide says the events since the planner's last step hold one that
	// needs its decision (a node failed for good). Once it has declared
	// the graph all the request needs (finish_when_done), the rest
	// (completions, retries, moves to another device) go on without it:
	// the graph runs to its end, and they wait for its next step.
	decide := false
	failed := countStatus(g, NodeFailed)
	// stopStep cancels the step in flight.
	stopStep := context.CancelCauseFunc(func(error) {})
	ask := func() {
		planning, refusedEdits = true, false
		view, evs := g.Clone(), events
		events = nil
		var stepCtx context.Context
		stepCtx, stopStep = context.WithCancelCause(ctx)
		r.planWG.Add(1)
		go func() {
			defer r.planWG.Done()
			answers <- r.think(stepCtx, view, evs)
		}()
	}
	defer func() { stopStep(nil) }()
	if len(g.Nodes) == 0 {
		ask()
	}
	for {
		if ctx.Err() != nil {
			// Cancelled or stopped: the ends taken since say nothing of
			// the graph (a node cut short is not a node that ended).
			return context.Cause(ctx)
		}
		if !refusedEdits && !ownRefusals && !decide && r.inflight == 0 && g.FinishWhenDone && g.AllCompleted() {
			// The planner declared the graph all the request needs and
			// every node has completed: its step on these last ends could
			// only finish, so the constellation ends without it (a
			// failure would have brought it back). A step still on an
			// earlier end (a sibling's, a moment before) is stopped: the
			// declaration holds for every completion, that one's too.
			if planning {
				stopStep(errors.New("every node has completed and the planner had declared the graph done (finish_when_done)"))
			}
			g.Status = Completed
			if g.Answer == "" {
				g.Answer = lastResult(g)
			}
			return nil
		}
		if !planning && len(events) > 0 && (decide || !g.FinishWhenDone) {
			decide = false
			ask()
		}
		if !planning || !r.o.opts.ReviewBeforeStart {
			// What is ready starts now, its task text made of its
			// dependencies' results, whether or not the planner thinks.
			evs, err := r.startReady(ctx)
			if err != nil {
				return err
			}
			if len(evs) > 0 {
				events = append(events, evs...)
				if n := countStatus(g, NodeFailed); n > failed {
					decide = true // a node gave up waiting for its device
				}
				failed = countStatus(g, NodeFailed)
				continue
			}
		}
		if !planning && r.inflight == 0 && ownRefusals {
			// Its last step's refused edits (a node on a device without
			// its app, say) left nothing that can run: the planner
			// hears so and tries again, bounded by its step limit.
			ownRefusals = false
			events = append(events, "nothing is running and nothing can start: the edits refused in your last step (their results say why) left the graph without a way on; change them, or finish")
			ask()
			continue
		}
		if !planning && r.inflight == 0 && r.waiting == 0 {
			// Nothing runs and nothing can, and the planner said nothing
			// more after the last ends.
			if g.AllCompleted() {
				g.Status = Completed
				if g.Answer == "" {
					g.Answer = lastResult(g)
				}
				return nil
			}
			if len(events) > 0 {
				// Events it has not heard of, and nothing can run: that
				// needs its decision.
				decide = true
				continue
			}
			g.Status, g.Error = Failed, "nothing more can run and the planner did not finish: "+stuck(g)
			return nil
		}
		var recheck <-chan time.Time
		if r.waiting > 0 {
			recheck = time.After(r.o.recheck)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-recheck:
			continue // the nodes that wait for a device look again
		case a := <-answers:
			planning = false
			end, refused, err := r.answer(ctx, a)
			if err != nil {
				return err
			}
			if end {
				return r.finish(ctx, r.g.Status != Completed)
			}
			events = append(events, refused...)
			refusedEdits = len(refused) > 0
			ownRefusals = slices.ContainsFunc(a.res.Edits, func(e Edit) bool { return !e.OK })
			// A re-plan may have revived failed nodes: count from here.
			decide, failed = decide || refusedEdits, countStatus(g, NodeFailed)
			continue
		case m := <-r.ends:
			events = append(events, r.take(ctx, m)...)
		}
		// A batch: whatever else has ended by now.
		for more := true; more; {
			select {
			case m := <-r.ends:
				events = append(events, r.take(ctx, m)...)
			default:
				more = false
			}
		}
		if n := countStatus(g, NodeFailed); n > failed || r.reviewDue {
			decide = true // a failure, or a result the planner asked to see
		}
		failed, r.reviewDue = countStatus(g, NodeFailed), false
		if err := r.commit(ctx); err != nil {
			return err
		}
	}
}

// countStatus counts the graph's nodes in status s.
func countStatus(g *Graph, s NodeStatus) int {
	n := 0
	for _, node := range g.Nodes {
		if node.Status == s {
			n++
		}
	}
	return n
}

// planAnswer is a planner's step as it comes back to the loop.
type planAnswer struct {
	res StepResult
	err error
	// steps is the planner's step count after the step; events what it
	// was shown.
	steps  int
	events []string
}

// think runs one planner step on view, a copy of the graph: it runs
// beside the loop and touches nothing the loop owns.
func (r *run) think(ctx context.Context, view *Graph, events []string) planAnswer {
	ds, err := r.o.devices(ctx)
	if err != nil {
		return planAnswer{err: fmt.Errorf("listing the devices: %w", err), events: events}
	}
	res, err := r.planner.Step(ctx, view, ds, events)
	if err != nil {
		err = fmt.Errorf("the planner: %w", err)
	}
	return planAnswer{res: res, err: err, steps: view.PlannerSteps, events: events}
}

// answer applies a planner's step to the graph as it stands now; end
// reports that the planner ended the constellation (the graph's status
// says how), refused says which of its edits the graph had moved past.
func (r *run) answer(ctx context.Context, a planAnswer) (end bool, refused []string, err error) {
	if a.err != nil {
		return false, nil, a.err
	}
	g, res := r.g, a.res
	if res.Status == fsm.Fail || res.Status == fsm.Error {
		r.end() // nothing queued starts from here: the request failed
	}
	g.PlannerSteps = max(g.PlannerSteps, a.steps)
	if slices.ContainsFunc(res.Edits, func(e Edit) bool { return e.OK }) {
		ds, err := r.o.devices(ctx)
		if err != nil {
			return false, nil, fmt.Errorf("listing the devices: %w", err)
		}
		res.Edits, refused = applyEdits(g, ds, res.Edits, r.o.opts.Bounds)
	}
	changed := slices.ContainsFunc(res.Edits, func(e Edit) bool { return e.OK })
	if changed {
		g.Version++
	}
	if err := r.commit(ctx); err != nil {
		return false, nil, err
	}
	r.emit(Event{Kind: "planner", Status: string(res.Status), Edits: res.Edits, Events: a.events, Answer: res.Answer})
	if changed {
		r.emit(Event{Kind: "graph", Graph: g.Clone()})
	}
	switch res.Status {
	case fsm.Finish:
		g.Status, g.Answer = Completed, res.Answer
		return true, nil, nil
	case fsm.Fail, fsm.Error:
		g.Status, g.Error = Failed, "the planner gave up: "+res.Answer
		return true, nil, nil
	}
	return false, refused, nil
}

// applyEdits makes a planner's edits, made on its copy, on the graph as it
// stands now, together or not at all, checked again as the editor checks
// them. It returns the edits as they went (when the graph has moved past
// one of them, as a node that started meanwhile, all are marked failed,
// with the reason) and what to tell the planner of those.
func applyEdits(g *Graph, ds []Device, eds []Edit, b Bounds) ([]Edit, []string) {
	var ok []int
	for i, ed := range eds {
		if ed.OK {
			ok = append(ok, i)
		}
	}
	if len(ok) == 0 {
		return eds, nil
	}
	batch := make([]Edit, len(ok))
	for j, i := range ok {
		batch[j] = eds[i]
	}
	c, _, batch := applyTogether(g, ds, batch, b)
	out := slices.Clone(eds)
	if c != nil {
		g.Nodes, g.Edges, g.FinishWhenDone = c.Nodes, c.Edges, c.FinishWhenDone
		return out, nil
	}
	var made []string
	for j, i := range ok {
		out[i].OK, out[i].Reason = false, "not applied: the graph changed while the planner thought: "+batch[j].Reason
		made = append(made, batch[j].Op+" "+argsText(batch[j].Args))
	}
	if len(made) > 4 {
		made = append(made[:3], fmt.Sprintf("and %d more", len(made)-3))
	}
	why := batch[0].Reason
	for _, ed := range batch {
		if !strings.HasPrefix(ed.Reason, "not applied:") {
			why = ed.Reason // the edit that failed on its own
			break
		}
	}
	return out, []string{fmt.Sprintf("your edits of your last step were NOT applied, none of them (%s): the graph changed while you planned: %s",
		strings.Join(made, ", "), oneLine(why))}
}

func argsText(args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprint(args)
	}
	return string(b)
}

// end says the constellation is ending: nodes still queued for a slot
// never start.
func (r *run) end() { r.endOnce.Do(func() { close(r.ending) }) }

// endNodes ends every node of an ended constellation that has not: a
// node in flight has its device task cancelled where the devices can, and
// every node not ended is marked cancelled, so that no node of an ended
// constellation stays running or pending.
func (r *run) endNodes() {
	why := "cancelled: the constellation ended (" + string(r.g.Status) + ")"
	c, canCancel := r.o.opts.Devices.(Canceller)
	for _, n := range r.g.Nodes {
		switch n.Status {
		case NodeRunning:
			if canCancel && n.TaskID != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := c.Cancel(ctx, n.TaskID); err != nil {
					why += "; its device task " + n.TaskID + " could not be cancelled: " + err.Error()
				}
				cancel()
			}
			n.Status, n.Error = NodeCancelled, why
		case NodePending:
			n.Status, n.Error = NodeCancelled, why
		}
	}
}

// Canceller is Devices that can stop a task they started: the tasks of a
// constellation that ends while they run are cancelled.
type Canceller interface {
	Cancel(ctx context.Context, taskID string) error
}

// errEnding is a node's end that never started: its constellation ended
// while it was queued.
var errEnding = errors.New("the constellation ended before the node started")

// finish ends a constellation the planner ended: nodes not started are
// cancelled, nodes in flight are waited for (their tasks are not cut off
// in the middle). When it ended as failed, the nodes in flight still
// queued for a slot never start either: nothing more of a failed
// request runs. Its FINISH lets every node launched before it end.
func (r *run) finish(ctx context.Context, failed bool) error {
	if failed {
		r.end()
	}
	for _, n := range r.g.Nodes {
		if n.Status == NodePending {
			n.Status, n.Error = NodeCancelled, "cancelled: the planner ended the constellation"
		}
	}
	for r.inflight > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case m := <-r.ends:
			r.take(ctx, m)
		}
	}
	return nil
}

// startReady starts every ready node whose device is connected. A node
// whose device is not waits for it (a device reconnecting after a
// restart, say) up to DeviceWait, then moves to another connected device
// that meets all its needs, sandbox included, or fails with the reason.
// It returns what to tell the planner (moves and failures).
func (r *run) startReady(ctx context.Context) ([]string, error) {
	ready := r.g.Ready()
	r.waiting = 0
	if len(ready) == 0 {
		return nil, nil
	}
	ds, err := r.o.devices(ctx)
	if err != nil {
		ds = nil // none is known connected: each node waits
	}
	now := r.o.opts.Now().UTC()
	var start []*Node
	var events []string
	for _, n := range ready {
		if i := slices.IndexFunc(ds, func(d Device) bool { return d.ID == n.Device }); i >= 0 && unmet(n, ds[i]) == "" {
			start = append(start, n)
			continue
		}
		if n.WaitingSince == nil {
			n.WaitingSince = &now
			r.emit(Event{Kind: "node_wait", Node: n.ID, Device: n.Device, Status: string(NodePending)})
		}
		if now.Sub(*n.WaitingSince) < r.o.opts.DeviceWait {
			r.waiting++
			continue
		}
		if to, ok := another(ds, n); ok {
			events = append(events, fmt.Sprintf("%s: its device %s did not connect within %s; it was moved to %s, a device with its apps%s",
				n.ID, n.Device, r.o.opts.DeviceWait, to, requiresText(n)))
			n.Device = to
			start = append(start, n)
			continue
		}
		out := TaskOutcome{NoDevice: true, Error: fmt.Sprintf("device %s did not connect within %s and no connected device has its apps%s (connected: %s)",
			n.Device, r.o.opts.DeviceWait, requiresText(n), deviceList(ds))}
		events = append(events, applyEnd(r.g, n, out, "", now)...)
		r.emit(Event{Kind: "node_end", Node: n.ID, Device: n.Device, Attempt: n.Attempts, Outcome: &out, Status: string(n.Status)})
	}
	for _, n := range start {
		n.Status, n.Attempts, n.Tries, n.TaskID, n.Error = NodeRunning, n.Attempts+1, n.Tries+1, "", ""
		n.Sent, n.StartedAt, n.EndedAt, n.WaitingSince = r.g.TaskText(n), &now, nil, nil
	}
	if len(start) == 0 && len(events) == 0 {
		return nil, nil
	}
	// Durable before any starts: a restart finds them running, with the
	// key each was started under.
	r.g.Version++
	if err := r.commit(ctx); err != nil {
		return nil, err
	}
	for _, n := range start {
		r.launchNode(ctx, n)
	}
	return events, nil
}

// requiresText is what a node requires besides its apps, for a message.
func requiresText(n *Node) string {
	if need := n.Requires.parts(); len(need) > 0 {
		return " and " + strings.Join(need, ", ")
	}
	return ""
}

// key names a node's attempt to the devices, the same after a restart.
func key(g *Graph, n *Node) string {
	return fmt.Sprintf("constellation:%s:%s:%d", g.ID, n.ID, n.Attempts)
}

// launchNode runs a node's attempt in its own goroutine: queued for its
// device's slot and a global one, started (or found again by its task id
// or key), waited for; its end goes to the loop.
func (r *run) launchNode(ctx context.Context, n *Node) {
	r.inflight++
	r.nodeWG.Add(1)
	id, device, k, text, taskID, attempt := n.ID, n.Device, key(r.g, n), n.Sent, n.TaskID, n.Attempts
	r.emit(Event{Kind: "node_start", Node: id, Device: device, Status: string(NodeRunning), Attempt: attempt, Sent: text, TaskID: taskID})
	go func() {
		defer r.nodeWG.Done()
		m := nodeMsg{node: id, attempt: attempt, taskID: taskID}
		m.out, m.err = r.runNode(ctx, device, k, text, &m)
		r.send(m)
	}()
}

// send gives the loop a node's message, unless the loop has ended.
func (r *run) send(m nodeMsg) {
	select {
	case r.ends <- m:
	case <-r.quit:
	}
}

func (r *run) runNode(ctx context.Context, device, k, text string, m *nodeMsg) (TaskOutcome, error) {
	devSlot := r.o.slot(device)
	if err := r.o.acquire(ctx, devSlot, m.node, r.ending); err != nil {
		return TaskOutcome{}, err
	}
	defer func() { <-devSlot }()
	if err := r.o.acquire(ctx, r.o.global, m.node, r.ending); err != nil {
		return TaskOutcome{}, err
	}
	defer func() { <-r.o.global }()
	if m.taskID == "" {
		// A slot taken as the constellation ended (a select picks at
		// random among what is ready) starts nothing.
		select {
		case <-r.ending:
			return TaskOutcome{}, errEnding
		default:
		}
		if ctx.Err() != nil {
			return TaskOutcome{}, context.Cause(ctx)
		}
	}
	r.o.inFlight(1)
	defer r.o.inFlight(-1)
	if m.taskID == "" {
		id, err := r.o.opts.Devices.Start(ctx, device, k, text)
		if err != nil && ctx.Err() != nil {
			// Stopped (for a restart) or cancelled while it started: not
			// an end of the node's; a resume starts it under its key.
			return TaskOutcome{}, context.Cause(ctx)
		}
		if err != nil {
			// Not started: as a failed attempt, or a lost device.
			return TaskOutcome{Error: "not started: " + err.Error(), DeviceLost: errors.Is(err, ErrDeviceGone)}, nil
		}
		m.taskID = id
		r.send(nodeMsg{node: m.node, attempt: m.attempt, taskID: id, started: true})
	}
	return r.o.opts.Devices.Wait(ctx, m.taskID)
}

// acquire takes a slot of sem, queued behind the nodes that wait for it,
// unless ending closes first.
func (o *Orchestrator) acquire(ctx context.Context, sem chan struct{}, node string, ending <-chan struct{}) error {
	select {
	case sem <- struct{}{}:
		return nil
	default:
	}
	if o.onWait != nil {
		o.onWait(node)
	}
	select {
	case sem <- struct{}{}:
		return nil
	case <-ending:
		return errEnding
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// ErrDeviceGone is what Devices.Start returns for a device that is not
// connected: the node moves to another device.
var ErrDeviceGone = errors.New("the device is not connected")

// take applies a node's message to the graph and says what happened, for
// the planner.
func (r *run) take(ctx context.Context, m nodeMsg) []string {
	g := r.g
	n := g.Node(m.node)
	if n == nil || n.Attempts != m.attempt || n.Status != NodeRunning {
		if !m.started {
			r.inflight--
		}
		return nil // an attempt the graph has moved past
	}
	if m.started {
		// Saved with the batch it came in (drive commits after each): a
		// restart before that finds the task by its attempt's key.
		n.TaskID = m.taskID
		r.emit(Event{Kind: "node_task", Node: n.ID, Device: n.Device, Attempt: m.attempt, TaskID: m.taskID})
		return nil
	}
	r.inflight--
	if errors.Is(m.err, errEnding) {
		n.Status, n.Error = NodeCancelled, "cancelled: the constellation ended before it started"
		return nil
	}
	if m.err != nil {
		if r.stopping.Load() || ctx.Err() != nil {
			return nil // left running for a resume, or cancelled
		}
		m.out = TaskOutcome{Error: "waiting for the task failed: " + m.err.Error()}
	}
	out := m.out
	to := ""
	if out.DeviceLost {
		ds, _ := r.o.devices(ctx)
		to, _ = another(ds, n)
	}
	events := applyEnd(g, n, out, to, r.o.opts.Now().UTC())
	r.reviewDue = r.reviewDue || (n.Review && n.Status == NodeCompleted)
	e := Event{Kind: "node_end", Node: n.ID, Device: n.Device, Attempt: m.attempt, Outcome: &out, Status: string(n.Status)}
	if out.DeviceLost && to != "" {
		e.Device, e.MovedTo = n.Lost[len(n.Lost)-1], n.Device
	}
	r.emit(e)
	return events
}

// applyEnd applies how a node's attempt ended to the graph and says what
// happened, for the planner: a completion; a lost device's node moved to
// device to (one that meets all its needs), or, when to is empty, left
// pending on its device, to wait for it (startReady); a node that never found a device failed; a failure
// retried, or beyond its retries failed with its dependents cancelled. A
// replay applies the same.
func applyEnd(g *Graph, n *Node, out TaskOutcome, to string, now time.Time) []string {
	n.EndedAt = &now
	switch {
	case out.OK:
		n.Status, n.Result, n.Error = NodeCompleted, out.Result, ""
		return []string{fmt.Sprintf("%s completed on %s: %s", n.ID, n.Device, oneLine(out.Result))}
	case out.DeviceLost && to != "":
		lost := n.Device
		n.Lost = append(n.Lost, lost)
		n.Device, n.Status, n.Error, n.TaskID = to, NodePending, "", ""
		return []string{fmt.Sprintf("%s: device %s was lost during its task (%s); it was moved to %s and runs again there",
			n.ID, lost, oneLine(out.Error), to)}
	case out.DeviceLost:
		// No device of its kind is connected: it waits for its own to
		// come back, rather than run where it must not.
		n.Lost = append(n.Lost, n.Device)
		n.Status, n.Error, n.TaskID = NodePending, "waiting for its device: "+out.Error, ""
		return []string{fmt.Sprintf("%s: device %s was lost during its task (%s); no other connected device has its apps%s, so it waits for %s to come back",
			n.ID, n.Device, oneLine(out.Error), requiresText(n), n.Device)}
	case out.NoDevice:
		n.Status, n.Error = NodeFailed, out.Error
	case n.Tries <= n.MaxRetries:
		n.Status, n.Error, n.TaskID = NodePending, out.Error, ""
		return []string{fmt.Sprintf("%s failed on %s (try %d of %d), tried again: %s", n.ID, n.Device, n.Tries, n.MaxRetries+1, oneLine(out.Error))}
	default:
		n.Status, n.Error = NodeFailed, out.Error
	}
	cancelled := g.CancelDependents(n.ID)
	ev := fmt.Sprintf("%s FAILED on %s: %s", n.ID, n.Device, oneLine(n.Error))
	if len(cancelled) > 0 {
		ev += fmt.Sprintf("; cancelled the nodes that depend on it: %v (update_node revives one once you have re-planned)", cancelled)
	}
	return []string{ev}
}

// another finds a connected device, other than those the node was lost
// on, that meets all its needs: its apps, and what it requires (a node
// placed in a sandbox requires that sandbox's image: it never moves to a
// device whose tools run on the host).
func another(ds []Device, n *Node) (string, bool) {
	for _, d := range ds {
		if d.ID == n.Device || slices.Contains(n.Lost, d.ID) {
			continue
		}
		if unmet(n, d) == "" {
			return d.ID, true
		}
	}
	return "", false
}

func lastResult(g *Graph) string {
	var last *Node
	for _, n := range g.Nodes {
		if len(g.Dependents(n.ID)) == 0 {
			last = n
		}
	}
	if last == nil {
		return ""
	}
	return last.Result
}

func stuck(g *Graph) string {
	var out []string
	for _, n := range g.Nodes {
		if n.Status != NodeCompleted {
			out = append(out, fmt.Sprintf("%s is %s", n.ID, n.Status))
		}
	}
	return fmt.Sprint(out)
}

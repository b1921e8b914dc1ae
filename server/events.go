package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The API's event streams (GET /api/events, GET /api/tasks/{id}/events)
// tell what changes as it changes: tasks created, their steps, commands,
// progress, questions and approvals, their end; devices that come and go.
// Every event has an id; a client that reconnects with the last id it saw
// (Last-Event-ID) gets what it missed, or, when that is no longer held (a
// restart of the server, a long absence), a snapshot of the whole state,
// then live events again. A subscriber that does not keep up is never
// waited for: it gets a resync event and a new snapshot.

// Event types.
const (
	// EventSnapshot is the whole state a stream covers: a TaskInfo for a
	// task's stream, a Snapshot for the server's.
	EventSnapshot = "snapshot"
	// EventTask is a task's TaskSummary, when it starts or changes.
	EventTask = "task"
	// EventStep is a finished agent step (StepInfo).
	EventStep = "step"
	// EventDecision is a model's decision (DecisionInfo), as soon as it is
	// understood and before its commands run.
	EventDecision = "decision"
	// EventCommand is a command's lifecycle change (dispatcher.CommandState).
	EventCommand = "command"
	// EventProgress is a running command's latest progress (ProgressInfo).
	EventProgress = "progress"
	// EventPending is a question or an approval (PendingInfo), opened or
	// settled.
	EventPending = "pending"
	// EventEnd is a task's end (its TaskSummary).
	EventEnd = "end"
	// EventClient is a device or constellation that registered or changed
	// (ClientInfo); EventClientGone one that left the registry.
	EventClient     = "client"
	EventClientGone = "client_gone"
	// EventResync says events were lost (the subscriber was too slow): a
	// snapshot follows.
	EventResync = "resync"
)

// globalTypes are the event types of the server's stream; a task's
// stream has every event of its task.
var globalTypes = map[string]bool{EventTask: true, EventEnd: true, EventPending: true, EventClient: true, EventClientGone: true}

// Event is one event of a stream.
type Event struct {
	// ID orders the events of a server's process ("EPOCH-SEQ"); a client
	// resumes after it.
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	TaskID string          `json:"task_id,omitempty"`
	Data   json.RawMessage `json:"data"`
}

// Snapshot is the server stream's first event: every task (newest
// first, as GET /api/tasks lists them) and every client.
type Snapshot struct {
	Tasks   []TaskSummary `json:"tasks"`
	Clients []ClientInfo  `json:"clients"`
}

// Sizes of the event buffers.
const (
	// eventRing is how many recent events a server keeps for clients
	// that reconnect.
	eventRing = 4096
	// subscriberBuffer is how many events may wait for one subscriber
	// before it is dropped to a resync.
	subscriberBuffer = 256
)

// hub fans events out to subscribers and keeps the latest for resuming.
type hub struct {
	epoch string
	mu    sync.Mutex
	seq   uint64
	ring  []Event // the latest eventRing events; ring[(seq-1)%eventRing] is the newest
	subs  map[*subscriber]struct{}
	// active counts subscribers: with none, and none lately, nothing is
	// built at all.
	active   atomic.Int32
	lastLeft atomic.Int64 // unix nanoseconds when the last subscriber left
}

// subscriber is one open stream.
type subscriber struct {
	task string // "" for the server's stream
	ch   chan Event
	// lost is closed when an event could not be queued.
	lost     chan struct{}
	lostOnce sync.Once
}

func newHub() *hub {
	var b [4]byte
	rand.Read(b[:])
	return &hub{epoch: hex.EncodeToString(b[:]), subs: map[*subscriber]struct{}{}, ring: make([]Event, eventRing)}
}

// resumeWindow is how long after the last subscriber left events are
// still kept, for a client that reconnects.
const resumeWindow = time.Minute

// wanted reports whether events are worth building: someone listens, or
// listened a moment ago and may reconnect.
func (h *hub) wanted() bool {
	if h == nil {
		return false
	}
	return h.active.Load() > 0 || time.Since(time.Unix(0, h.lastLeft.Load())) < resumeWindow
}

// publish sends an event to the subscribers that want it and keeps it.
// It never blocks on a subscriber. v is encoded once.
func (h *hub) publish(typ, taskID string, v any) {
	if !h.wanted() {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	e := Event{ID: h.epoch + "-" + strconv.FormatUint(h.seq, 10), Type: typ, TaskID: taskID, Data: data}
	h.ring[(h.seq-1)%eventRing] = e
	for s := range h.subs {
		if !s.wants(e) {
			continue
		}
		select {
		case s.ch <- e:
		default:
			s.lostOnce.Do(func() { close(s.lost) })
		}
	}
}

func (s *subscriber) wants(e Event) bool {
	if s.task == "" {
		return globalTypes[e.Type]
	}
	return e.TaskID == s.task
}

// subscribe opens a stream. When after is an id of this process whose
// successors are still held, it returns the events since then that the
// stream wants, and ok; live events follow on s.ch without a gap or a
// repeat. Otherwise ok is false: the caller sends a snapshot, taken
// after this call, and skips the events of s.ch up to the snapshot's
// mark (they are in it).
func (h *hub) subscribe(task, after string) (s *subscriber, missed []Event, ok bool) {
	s = &subscriber{task: task, ch: make(chan Event, subscriberBuffer), lost: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.subs[s] = struct{}{}
	h.active.Add(1)
	if seq, mine := h.parse(after); mine && seq <= h.seq && h.seq-seq < eventRing {
		for n := seq + 1; n <= h.seq; n++ {
			if e := h.ring[(n-1)%eventRing]; s.wants(e) {
				missed = append(missed, e)
			}
		}
		return s, missed, true
	}
	return s, nil, false
}

// mark is the id of the latest event, for a snapshot taken now.
func (h *hub) mark() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.epoch + "-" + strconv.FormatUint(h.seq, 10)
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		h.lastLeft.Store(time.Now().UnixNano())
		h.active.Add(-1)
	}
	h.mu.Unlock()
}

// parse reads an event id of this process.
func (h *hub) parse(id string) (uint64, bool) {
	epoch, seq, ok := strings.Cut(id, "-")
	if !ok || epoch != h.epoch {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

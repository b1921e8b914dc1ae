package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/server/store"
)

// A task's journal is what its agents were told, in order: the model's
// replies, each command round (its frame written before it is sent) and
// its results, and the answers of a person. After a restart the task's
// agents run again from the start with the journal answering for the
// model, the device and the person, so they reach the point where the
// task was without asking the model or running a command again; the
// first round sent but not answered is waited for again under its own
// response_id, and from there on the task runs live.

// Kinds of journal entries.
const (
	entryModel   = "model"   // an llm.Response
	entryRound   = "round"   // a command frame, keyed by its commands
	entryResults = "results" // a round's results, keyed by its response_id
	entryAnswer  = "answer"  // a person's answer (a string or a bool)
)

// journal records a task's journal and, for a resumed task, replays it.
type journal struct {
	s      *Server
	t      *task // set when its task starts
	taskID string

	mu      sync.Mutex
	seq     int
	models  []json.RawMessage
	answers []json.RawMessage
	rounds  map[string][]*journalRound // not yet replayed, by commands, oldest first
}

// journalRound is a recorded round: its frame, and its results and its
// commands' final states if it ended.
type journalRound struct {
	frame   *aip.ServerMessage
	results []command.Result
	states  []dispatcher.CommandState
}

// roundResults is a results entry: what the agents were given, and each
// command's final state, which a resumed task shows again (its record in
// the store keeps only the latest). Journals written before the states
// were recorded hold the results alone, as a JSON array.
type roundResults struct {
	Results []command.Result          `json:"results"`
	States  []dispatcher.CommandState `json:"states,omitempty"`
}

// Append encodes the entry (see appender): the results without
// reflection, which with their states cost a short task 5% of its time
// on a durable store.
func (r roundResults) Append(dst []byte) ([]byte, error) {
	b := append(dst, `{"results":`...)
	b, err := aip.AppendResults(b, r.Results)
	if err != nil {
		return nil, err
	}
	if len(r.States) > 0 {
		states, err := json.Marshal(r.States)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"states":`...)
		b = append(b, states...)
	}
	return append(b, '}'), nil
}

func (r *roundResults) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '[' {
		return json.Unmarshal(b, &r.Results)
	}
	type plain roundResults
	return json.Unmarshal(b, (*plain)(r))
}

// loadJournal reads a task's journal for replay.
func loadJournal(ctx context.Context, s *Server, taskID string) (*journal, error) {
	j := &journal{s: s, taskID: taskID, rounds: map[string][]*journalRound{}}
	entries, err := s.store.Journal(ctx, taskID)
	if err != nil {
		return nil, err
	}
	byResponse := map[string]*journalRound{}
	for _, e := range entries {
		j.seq = max(j.seq, e.Seq)
		switch e.Kind {
		case entryModel:
			j.models = append(j.models, e.Data)
		case entryAnswer:
			j.answers = append(j.answers, e.Data)
		case entryRound:
			var f aip.ServerMessage
			if err := json.Unmarshal(e.Data, &f); err != nil {
				return nil, fmt.Errorf("journal of task %s, entry %d: %w", taskID, e.Seq, err)
			}
			r := &journalRound{frame: &f}
			j.rounds[e.Key] = append(j.rounds[e.Key], r)
			byResponse[f.ResponseID] = r
		case entryResults:
			if r := byResponse[e.Key]; r != nil {
				var rr roundResults
				if err := json.Unmarshal(e.Data, &rr); err != nil {
					return nil, fmt.Errorf("journal of task %s, entry %d: %w", taskID, e.Seq, err)
				}
				r.results, r.states = rr.Results, rr.States
			}
		}
	}
	return j, nil
}

// append writes an entry. Only a round's frame is waited for (a round
// that cannot be recorded is not sent); model replies, results and
// answers are written in order before it without waiting: one lost in a
// crash is only asked for again (the model, or the device, which answers
// a re-sent round from its cache or journal).
func (j *journal) append(kind, key string, v any) error {
	if j.s.suspending.Load() || (j.t != nil && j.t.handedOff.Load()) {
		// What agents stopped by Suspend get is not what they would have
		// got: the next server asks again.
		return ErrSuspended
	}
	if j.s.volatile() {
		return nil
	}
	var data []byte
	var err error
	if a, ok := v.(appender); ok {
		data, err = a.Append(nil)
	} else {
		data, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.seq++
	seq := j.seq
	j.mu.Unlock()
	e := store.Entry{Seq: seq, Kind: kind, Key: key, Data: data}
	if kind != entryRound {
		return j.s.store.Append(context.Background(), j.taskID, e, false)
	}
	ctx := context.Background()
	if j.t != nil {
		ctx = j.t.ctx // the task cancelled, or stopped: it waits no more
	}
	return j.s.keep(ctx, j.taskID, "its next command round", func() error {
		wctx, cancel := storeCtx()
		defer cancel()
		return j.s.store.Append(wctx, j.taskID, e, true)
	})
}

// appender is a value that encodes itself as JSON: an AIP frame, whose
// encoder is faster than encoding/json (which would also compact and
// check again what the frame's MarshalJSON returns).
type appender interface {
	Append(dst []byte) ([]byte, error)
}

// next takes the oldest unreplayed entry of a list.
func (j *journal) next(list *[]json.RawMessage) json.RawMessage {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(*list) == 0 {
		return nil
	}
	e := (*list)[0]
	*list = (*list)[1:]
	return e
}

// nextRound takes the oldest unreplayed round with these commands.
func (j *journal) nextRound(key string) *journalRound {
	j.mu.Lock()
	defer j.mu.Unlock()
	list := j.rounds[key]
	if len(list) == 0 {
		return nil
	}
	j.rounds[key] = list[1:]
	return list[0]
}

// roundKey names a round by its commands, without their call ids (which
// may be fresh on every run): the same commands in the same order.
func roundKey(cmds []command.Command) string {
	type k struct {
		Tool, NS string
		Type     command.ToolType
		Params   map[string]any
	}
	keys := make([]k, len(cmds))
	for i, c := range cmds {
		keys[i] = k{c.ToolName, c.Namespace, c.ToolType, c.Parameters}
	}
	b, _ := json.Marshal(keys)
	return string(b)
}

// journaledDispatcher sends a task's rounds through its device's
// dispatcher, recording each; replayed rounds are answered from the
// journal.
type journaledDispatcher struct {
	j     *journal
	ws    *dispatcher.WebSocket
	round dispatcher.Round
}

func (d journaledDispatcher) Execute(ctx context.Context, cmds []command.Command) []command.Result {
	if len(cmds) == 0 {
		return []command.Result{}
	}
	if d.j.s.volatile() {
		return d.ws.Session(d.round).Execute(ctx, cmds)
	}
	key := roundKey(cmds)
	r := d.j.nextRound(key)
	if r != nil && r.results != nil {
		// Its commands as they ended, for the task's record.
		for _, st := range r.states {
			if d.round.OnState != nil {
				d.round.OnState(st)
			}
		}
		return withCallIDs(r.results, cmds)
	}
	info, states := d.watch()
	if r != nil {
		// Sent before the restart, not answered: wait for it again. The
		// device answers from its cache or journal if it ran it.
		res := d.ws.Rejoin(ctx, info, r.frame)
		d.recordResults(r.frame.ResponseID, res, states)
		return withCallIDs(res, cmds)
	}
	var responseID string
	info.OnFrame = func(f *aip.ServerMessage) error {
		responseID = f.ResponseID
		return d.j.append(entryRound, key, f)
	}
	res := d.ws.Session(info).Execute(ctx, cmds)
	if responseID != "" {
		d.recordResults(responseID, res, states)
	}
	return res
}

// watch is the round's settings with its commands' states noted as they
// change: states returns the last of each, in the order they came.
func (d journaledDispatcher) watch() (dispatcher.Round, func() []dispatcher.CommandState) {
	var mu sync.Mutex
	var last []dispatcher.CommandState // each command's latest, in the order first seen
	info := d.round
	info.OnState = func(cs dispatcher.CommandState) {
		mu.Lock()
		// A round has a handful of commands: a list costs less than
		// a map (whose growth cost a short task 3% of its time).
		i := slices.IndexFunc(last, func(p dispatcher.CommandState) bool { return p.CallID == cs.CallID })
		switch {
		case i < 0:
			last = append(last, cs)
		case last[i].State.Terminal() && !cs.State.Terminal():
			cs = last[i] // a late progress report after the end
		default:
			last[i] = cs
		}
		mu.Unlock()
		if d.round.OnState != nil {
			d.round.OnState(cs)
		}
	}
	return info, func() []dispatcher.CommandState {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(last)
	}
}

// recordResults journals a round's results with its commands' final
// states.
func (d journaledDispatcher) recordResults(responseID string, res []command.Result, states func() []dispatcher.CommandState) {
	if err := d.j.append(entryResults, responseID, roundResults{Results: res, States: states()}); err != nil && !errors.Is(err, ErrSuspended) {
		d.j.s.logf("task %s: results not recorded: %v", d.j.taskID, err)
	}
}

// withCallIDs gives recorded results the call ids of this run's commands.
func withCallIDs(recorded []command.Result, cmds []command.Command) []command.Result {
	out := make([]command.Result, len(cmds))
	for i, c := range cmds {
		if i < len(recorded) {
			out[i] = recorded[i]
		} else {
			out[i] = command.Failed(c.CallID, "the journal holds no result for this command")
		}
		if c.CallID != "" {
			out[i].CallID = c.CallID
		}
	}
	return out
}

// journaledModel records the model's replies; a resumed task's earlier
// replies come from the journal.
type journaledModel struct {
	j     *journal
	inner llm.Model
}

// skipper is a model that can pass over a reply served from a journal (a
// scripted model keeps its place in its script).
type skipper interface{ Skip() }

func (m journaledModel) replay() (*llm.Response, bool) {
	raw := m.j.next(&m.j.models)
	if raw == nil {
		return nil, false
	}
	var resp llm.Response
	if err := json.Unmarshal(raw, &resp); err != nil {
		return nil, false
	}
	if s, ok := m.inner.(skipper); ok {
		s.Skip()
	}
	return &resp, true
}

func (m journaledModel) record(resp *llm.Response, err error) (*llm.Response, error) {
	if err == nil && resp != nil {
		if jerr := m.j.append(entryModel, "", resp); jerr != nil && !errors.Is(jerr, ErrSuspended) {
			m.j.s.logf("task %s: model reply not recorded: %v", m.j.taskID, jerr)
		}
	}
	return resp, err
}

func (m journaledModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if resp, ok := m.replay(); ok {
		return resp, nil
	}
	return m.record(m.inner.Complete(ctx, req))
}

func (m journaledModel) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	if resp, ok := m.replay(); ok {
		return resp, nil
	}
	return m.record(m.inner.Stream(ctx, req, onChunk))
}

// SupportsComputer passes on whether the model has a native computer-use
// tool (llm.ComputerUser).
func (m journaledModel) SupportsComputer() bool { return llm.SupportsComputer(m.inner) }

package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/internal/uuid"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/price"
)

// TaskStatus is where a task is.
type TaskStatus string

// The task statuses.
const (
	StatusRunning   TaskStatus = "running"
	StatusCompleted TaskStatus = "completed"
	StatusFailed    TaskStatus = "failed"
	StatusCancelled TaskStatus = "cancelled"
)

// TaskInfo is a task as the API shows it: its status, its agents' steps,
// its result and every command's lifecycle.
type TaskInfo struct {
	// ID is also the AIP session_id.
	ID          string `json:"id"`
	ClientID    string `json:"client_id"`
	RequesterID string `json:"requester_id,omitempty"`
	// RequesterSession is the session_id the constellation that asked
	// gave the task (UFO's Galaxy names each task so, and waits for a
	// task_end with that id): its ack and task_end carry it, and a task
	// frame of the same constellation with that id again joins the task
	// instead of starting another.
	RequesterSession string                    `json:"requester_session,omitempty"`
	TaskName         string                    `json:"task_name"`
	Request          string                    `json:"request"`
	Status           TaskStatus                `json:"status"`
	QueuedBy         string                    `json:"queued_by"`
	CreatedAt        time.Time                 `json:"created_at"`
	EndedAt          *time.Time                `json:"ended_at,omitempty"`
	Result           string                    `json:"result,omitempty"`
	Error            string                    `json:"error,omitempty"`
	Steps            []StepInfo                `json:"steps"`
	Commands         []dispatcher.CommandState `json:"commands"`
	// StepsOmitted and CommandsOmitted count the earliest steps and
	// commands left out of a running task's record in the store, which
	// keeps its latest ones (the API of a server that does not run the
	// task shows them so); the journal has them all, and a resumed task
	// shows them all again.
	StepsOmitted    int `json:"steps_omitted,omitempty"`
	CommandsOmitted int `json:"commands_omitted,omitempty"`
	// Pending are the agents' questions and approvals, open and settled.
	Pending []PendingInfo `json:"pending"`
	// Usage is the tokens the task's model calls used so far ("estimated"
	// when a server reported none and Saucer counted them). Cost is what
	// they cost as a person reads it: "$0.0123", "~$0.0123 (estimated)",
	// or "cost unknown" for a model without a price; CostUSD is the
	// figure, absent when unknown. Both are empty before the first step.
	Usage   llm.Usage `json:"usage"`
	Cost    string    `json:"cost,omitempty"`
	CostUSD *float64  `json:"cost_usd,omitempty"`
	// Progress is the latest progress of its running commands.
	Progress []ProgressInfo `json:"progress,omitempty"`
}

// setSpent shows what the model calls used and cost.
func (i *TaskInfo) setSpent(u llm.Usage, c price.Cost) {
	i.Usage, i.Cost, i.CostUSD = u, c.String(), c.USDPointer()
}

// StepInfo is one agent step.
type StepInfo struct {
	Agent      string `json:"agent"`
	Round      int    `json:"round"`
	Step       int    `json:"step"`
	Status     string `json:"status"`
	Thought    string `json:"thought,omitempty"`
	Commands   int    `json:"commands"`
	Failed     int    `json:"failed"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
	// N is the step's place in the task's steps, from 1.
	N int `json:"n"`
	// Result is what the step's decision gave as its result.
	Result string `json:"result,omitempty"`
	// Actions are its commands with their results.
	Actions []ActionInfo `json:"actions,omitempty"`
	// Usage is its model calls' tokens.
	Usage *llm.Usage `json:"usage,omitempty"`
	// Screenshot is the one the model saw, with the point clicked.
	Screenshot *Screenshot `json:"screenshot,omitempty"`
}

// task is one session on a device.
type task struct {
	srv       *Server
	mu        sync.Mutex
	wmu       sync.Mutex // serialises writes of its record
	dirty     bool       // changed since its record was last queued
	flushing  bool       // a write of its record is scheduled
	resume    bool       // restored from the store: its agents resume
	journal   *journal
	info      TaskInfo
	cmdIndex  map[string]int
	target    *device
	requester *device // a constellation that asked, if any
	// cost sums the steps' costs (TaskInfo shows it as text).
	cost   price.Cost
	ctx    context.Context
	cancel context.CancelCauseFunc
	// endStatus, when set, is how the task ends whatever its agents say
	// (cancelled by the API, failed at shutdown).
	endStatus TaskStatus
	endCause  error
	endSent   bool
	// stopCommands is set when the server gave up on the task's device
	// (it stayed away too long): its task_end tells the device to stop
	// the task's command in progress (aip.ResultStopCommands), since its
	// work may be done elsewhere. Guarded by mu.
	stopCommands bool
	// handedOff is set when another server takes the task over: it stops
	// like a suspended one and leaves this server.
	handedOff atomic.Bool
	pushedAt  time.Time
	done      chan struct{}
	// pending are the agents' questions and approvals, in order.
	pending []*PendingInfo
	// progress is the latest progress of running commands, by call id;
	// lastShot the latest screenshot each agent's model saw, for its next
	// step; shots the latest screenshots, for the API.
	progress map[string]ProgressInfo
	lastShot map[string]*shotData
	shots    []*shotData
}

// frozen says the task's record and journal no longer change here: the
// server is suspending, or another server took the task.
func (t *task) frozen() bool {
	return t.srv.suspending.Load() || t.handedOff.Load()
}

func (t *task) ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

func (t *task) snapshot() TaskInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	info := t.info
	info.Steps = append([]StepInfo{}, t.info.Steps...)
	info.Commands = append([]dispatcher.CommandState{}, t.info.Commands...)
	info.Pending = make([]PendingInfo, 0, len(t.pending))
	for _, it := range t.pending {
		info.Pending = append(info.Pending, *it)
	}
	info.Progress = t.progressListLocked()
	return info
}

// onState records a command's lifecycle change; a late "running" after a
// final state is ignored.
func (t *task) onState(cs dispatcher.CommandState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cs.State.Terminal() {
		delete(t.progress, cs.CallID)
	}
	if i, ok := t.cmdIndex[cs.CallID]; ok {
		if t.info.Commands[i].State.Terminal() && !cs.State.Terminal() {
			return
		}
		t.info.Commands[i] = cs
		t.commandChangedLocked(cs)
		return
	}
	defer t.commandChangedLocked(cs)
	cmds := t.info.Commands
	if n := len(cmds); n == 0 || !cs.CreatedAt.Before(cmds[n-1].CreatedAt) {
		t.cmdIndex[cs.CallID] = n
		t.info.Commands = append(cmds, cs)
		return
	}
	// An earlier round's command, replayed from the journal after a
	// restart whose record kept only the latest: in its place, by the
	// time its round was made.
	i := sort.Search(len(cmds), func(i int) bool { return cs.CreatedAt.Before(cmds[i].CreatedAt) })
	t.info.Commands = append(cmds[:i], append([]dispatcher.CommandState{cs}, cmds[i:]...)...)
	for j := i; j < len(t.info.Commands); j++ {
		t.cmdIndex[t.info.Commands[j].CallID] = j
	}
}

// observe records agent steps.
func (t *task) observe(e agent.Event) {
	if e.Kind != agent.EventStep {
		return
	}
	st := StepInfo{Agent: e.Agent, Round: e.Round, Step: e.Step, Status: string(e.To), Commands: len(e.Commands),
		DurationMS: e.Duration.Milliseconds()}
	if e.Decision != nil {
		st.Thought = e.Decision.Thought
		if st.Status == "" {
			st.Status = string(e.Decision.Status)
		}
	}
	for _, r := range e.Results {
		if !r.OK() {
			st.Failed++
		}
	}
	if e.Err != nil {
		st.Error = e.Err.Error()
	} else if len(e.Errors) > 0 {
		st.Error = errors.Join(e.Errors...).Error()
	}
	t.stepDetails(&st, e)
	t.mu.Lock()
	st.N = t.info.StepsOmitted + len(t.info.Steps) + 1
	t.attachShotLocked(&st, e)
	t.info.Steps = append(t.info.Steps, st)
	t.cost = t.cost.Add(e.Cost)
	t.info.setSpent(t.info.Usage.Add(e.Usage), t.cost)
	t.publishLocked(EventStep, st)
	t.mu.Unlock()
}

// Dispatch starts a task on a connected device, as POST /api/dispatch
// does: the device gets a task frame and the agents start at once.
func (s *Server) Dispatch(clientID, request, taskName, queuedBy string) (TaskInfo, error) {
	switch {
	case clientID == "":
		return TaskInfo{}, fmt.Errorf("%w: client_id is required: the device to run the task on (GET /api/clients lists them)", ErrBadRequest)
	case blank(request):
		return TaskInfo{}, errBlankRequest
	}
	if taskName == "" {
		taskName = "task"
	}
	s.mu.Lock()
	d := s.devices[clientID]
	if d == nil || d.conn == nil || d.clientType != aip.ClientDevice {
		s.mu.Unlock()
		return TaskInfo{}, fmt.Errorf("%w: %q (GET /api/clients lists the connected ones)", ErrNoDevice, clientID)
	}
	t, err := s.newTaskLocked(d, nil, "", request, taskName, queuedBy)
	if err != nil {
		s.mu.Unlock()
		return TaskInfo{}, err
	}
	t.pushedAt = time.Now()
	d.pushed = append(d.pushed, t)
	s.mu.Unlock()
	if err := s.persistNew(t); err != nil {
		return TaskInfo{}, s.refuse(t, err)
	}
	d.Send(s.ctx, &aip.ServerMessage{Type: aip.TypeTask, Status: aip.StatusContinue, UserRequest: request, TaskName: taskName,
		SessionID: t.info.ID, ResponseID: s.opts.NewID(), Timestamp: aip.Timestamp(time.Now())})
	s.start(t)
	return t.snapshot(), nil
}

// errBlankRequest refuses a task whose request is empty or only
// whitespace: its agents would spend model calls on nothing.
var errBlankRequest = fmt.Errorf("%w: the request is empty: send \"request\" with the task for the device, in words", ErrBadRequest)

// blank reports a request that is empty or only whitespace.
func blank(request string) bool { return strings.TrimSpace(request) == "" }

// newTaskLocked creates a task within the limits; session is the id the
// requester gave it, if any. Called with s.mu held.
func (s *Server) newTaskLocked(target, requester *device, session, request, taskName, queuedBy string) (*task, error) {
	switch {
	case blank(request):
		return nil, errBlankRequest
	case s.closing:
		return nil, ErrShuttingDown
	case s.running >= s.opts.MaxTasks:
		return nil, fmt.Errorf("%w: the server runs %d tasks, its limit; try again later", ErrBusy, s.running)
	case target.tasks >= s.opts.MaxTasksPerDevice:
		return nil, fmt.Errorf("%w: device %s runs %d task(s), its limit; try again when it is done", ErrBusy, target.id, target.tasks)
	}
	if _, err := s.agentNameLocked(target); err != nil {
		return nil, err
	}
	s.running++
	target.tasks++
	t := &task{srv: s, target: target, requester: requester, cmdIndex: map[string]int{}, done: make(chan struct{}),
		info: TaskInfo{ID: s.opts.NewID(), ClientID: target.id, TaskName: taskName, Request: request, Status: StatusRunning,
			QueuedBy: queuedBy, CreatedAt: time.Now().UTC(), Steps: []StepInfo{}, Commands: []dispatcher.CommandState{}}}
	if requester != nil {
		t.info.RequesterID, t.info.RequesterSession = requester.id, session
	}
	t.publishLocked("", nil)
	t.ctx, t.cancel = context.WithCancelCause(s.ctx)
	s.tasks[t.info.ID] = t
	s.taskWG.Add(1)
	return t, nil
}

// taskRequest handles a task frame from a client: the echo of a task this
// server pushed joins that task; anything else starts a new one.
func (s *Server) taskRequest(d *device, conn *aip.Conn, m *aip.ClientMessage) {
	s.mu.Lock()
	if d.clientType == aip.ClientDevice {
		keep := d.pushed[:0]
		var echo *task
		for _, t := range d.pushed {
			switch {
			case echo == nil && ((m.SessionID != "" && m.SessionID == t.info.ID) ||
				(m.SessionID == "" && m.Request == t.info.Request && m.TaskName == t.info.TaskName)):
				echo = t
			case time.Since(t.pushedAt) < time.Minute && !t.ended():
				keep = append(keep, t)
			}
		}
		d.pushed = keep
		if echo != nil {
			s.mu.Unlock()
			conn.Send(s.ctx, s.ack(echo.info.ID))
			return
		}
	}
	target, requester, queuedBy := d, (*device)(nil), "device:"+d.id
	if d.clientType == aip.ClientConstellation {
		id := m.TargetID
		if id == "" {
			id = d.targetID
		}
		if id != d.targetID {
			s.mu.Unlock()
			s.sendError(conn, fmt.Sprintf("this constellation registered for device '%s' and may not start tasks on '%s'", d.targetID, id), m.SessionID)
			return
		}
		target, requester, queuedBy = s.devices[id], d, "constellation:"+d.id
		if target == nil || target.conn == nil || target.clientType != aip.ClientDevice {
			s.mu.Unlock()
			s.sendError(conn, fmt.Sprintf("Target device '%s' is not connected", id), m.SessionID)
			return
		}
	}
	if requester != nil && m.SessionID != "" {
		// The constellation names the task: asked again (it lost the
		// ack, or restarted), it gets the task it started, never a
		// second one; a name another client gave is not its to use.
		if t, owner := s.requestedLocked(m.SessionID, requester.id); t != nil {
			s.mu.Unlock()
			conn.Send(s.ctx, s.ack(m.SessionID))
			if t.ended() {
				t.mu.Lock()
				info := t.info
				t.mu.Unlock()
				end := taskEnd(info, nil)
				end.SessionID = m.SessionID
				conn.Send(s.ctx, end)
			}
			return
		} else if owner != "" {
			s.mu.Unlock()
			s.sendError(conn, fmt.Sprintf("session_id '%s' is owned by another client: give each task a session_id of its own", m.SessionID), m.SessionID)
			return
		}
	}
	taskName := m.TaskName
	if taskName == "" {
		taskName = "task"
	}
	session := ""
	if requester != nil {
		session = m.SessionID
	}
	t, err := s.newTaskLocked(target, requester, session, m.Request, taskName, queuedBy)
	s.mu.Unlock()
	if err != nil {
		s.sendError(conn, fmt.Sprintf("task not started: %v", err), m.SessionID)
		return
	}
	if err := s.persistNew(t); err != nil {
		s.sendError(conn, s.refuse(t, err).Error(), m.SessionID)
		return
	}
	conn.Send(s.ctx, s.ack(cmp.Or(t.info.RequesterSession, t.info.ID)))
	s.start(t)
}

// requestedLocked finds the task a constellation named session: the task
// if requester asked for it, or the client that did. Called with s.mu
// held.
func (s *Server) requestedLocked(session, requester string) (t *task, owner string) {
	for _, t := range s.tasks {
		if t.info.RequesterSession != session {
			continue
		}
		if t.info.RequesterID == requester {
			return t, ""
		}
		owner = t.info.RequesterID
	}
	return nil, owner
}

// start runs the task's agents in their own goroutine. A task restored
// from the store starts again from its beginning with its journal
// replaying what its agents were told before.
func (s *Server) start(t *task) {
	s.mu.Lock()
	info, ns := t.target.info, t.target.namespaces
	agentName, agentErr := s.agentNameLocked(t.target) // a restored task's device may have changed
	s.mu.Unlock()
	// The agents know the device by the id the server (and a
	// constellation) knows it by: a registration need not carry it.
	info.DeviceID = t.target.id
	j := &journal{s: s, taskID: t.info.ID, rounds: map[string][]*journalRound{}}
	if t.resume {
		s.logf("task %s on %s resumes: %s", t.info.ID, t.target.id, t.info.Request)
		ctx, cancel := storeCtx()
		var err error
		j, err = loadJournal(ctx, s, t.info.ID)
		cancel()
		if err != nil {
			go func() {
				defer s.taskWG.Done()
				s.finish(t, nil, fmt.Errorf("its journal could not be read after the restart: %w", err))
			}()
			return
		}
		// The replay brings the steps back, and the commands the record
		// left out; questions left open by the restart are asked again.
		t.mu.Lock()
		t.info.Steps, t.info.StepsOmitted, t.info.CommandsOmitted = []StepInfo{}, 0, 0
		t.info.Usage, t.info.Cost, t.info.CostUSD, t.cost = llm.Usage{}, "", nil, price.Cost{}
		now := time.Now().UTC()
		for _, it := range t.pending {
			if it.Status == "open" {
				it.Status, it.SettledAt, it.SettledBy = "withdrawn", &now, "the server's restart"
				close(it.settled)
			}
		}
		t.mu.Unlock()
	} else {
		s.logf("task %s on %s: %s", t.info.ID, t.target.id, t.info.Request)
	}
	t.journal, j.t = j, t
	onState := func(cs dispatcher.CommandState) {
		t.onState(cs)
		s.persist(t)
	}
	onProgress := func(p command.Progress) {
		if !p.State.Terminal() { // onState has a command's end
			s.commandProgress(t.target.id, progressInfo(p))
		}
	}
	disp := journaledDispatcher{j: j, ws: t.target.disp, round: dispatcher.Round{SessionID: t.info.ID, TaskName: t.info.TaskName, AgentName: agentName,
		QueuedBy: t.info.QueuedBy, TTL: s.opts.CommandTTL, OnState: onState, OnProgress: onProgress}}
	observe := func(e agent.Event) {
		t.watchAgents(e)
		t.observe(e)
		if e.Kind == agent.EventStep {
			s.persist(t)
		}
	}
	// What the agents' commands go through: UFO's client gets what it
	// can route (ufo.go); for another, the server keeps the tool
	// listings its rounds bring back.
	var taskDisp dispatcher.Dispatcher = learningDispatcher{inner: disp, s: s, d: t.target, taskID: t.info.ID}
	s.mu.Lock()
	if t.target.speaksUFO() {
		taskDisp = ufoDispatcher{inner: disp, s: s, d: t.target, agent: agentName}
	}
	s.mu.Unlock()
	go func() {
		defer s.taskWG.Done()
		var out *agent.Outcome
		var runner Runner
		err := agentErr
		if err == nil {
			runner, err = s.opts.NewSession(SessionSpec{TaskID: t.info.ID, ClientID: t.target.id, Request: t.info.Request,
				TaskName: t.info.TaskName, Dispatcher: taskDisp, Device: info, AppDescriptions: ns, Observer: observe,
				Person: taskPerson{s, t}, Resumed: t.resume,
				WrapModel: func(m llm.Model) llm.Model { return journaledModel{j: j, inner: m} }})
		}
		if err == nil {
			out = runner.Run(t.ctx, t.info.Request)
		}
		s.finish(t, out, err)
	}()
}

// finish records how the task ended, frees its slots and tells the
// device (and the constellation that asked).
func (s *Server) finish(t *task, out *agent.Outcome, err error) {
	if t.frozen() {
		// Stopped for a restart, or for the server its device moved to:
		// the record stays as it was, running, and the next server
		// resumes it.
		s.mu.Lock()
		s.running--
		t.target.tasks--
		if t.handedOff.Load() && s.tasks[t.info.ID] == t {
			delete(s.tasks, t.info.ID)
		}
		s.mu.Unlock()
		close(t.done)
		return
	}
	// The slots are free before the end is visible: a caller that sees
	// the task ended may dispatch the next one to its device at once.
	s.mu.Lock()
	s.running--
	t.target.tasks--
	s.mu.Unlock()
	now := time.Now().UTC()
	t.mu.Lock()
	t.info.EndedAt = &now
	switch {
	case t.endStatus != "":
		t.info.Status = t.endStatus
		t.info.Error = t.endCause.Error()
	case err != nil:
		t.info.Status, t.info.Error = StatusFailed, fmt.Sprintf("the agents could not start: %v", err)
	case out.OK():
		t.info.Status = StatusCompleted
	default:
		t.info.Status = StatusFailed
		t.info.Error = fmt.Sprintf("the task ended in %s", out.Status)
		if out.Budget != "" {
			t.info.Error += ": " + out.Budget
		}
		if out.Err != nil {
			t.info.Error += ": " + out.Err.Error()
		}
	}
	if out != nil {
		t.info.Result = out.Answer
		if out.Usage != (llm.Usage{}) || out.Cost != (price.Cost{}) {
			t.info.setSpent(out.Usage, out.Cost)
		}
	}
	sendEnd := !t.endSent
	t.endSent = true
	stop := t.stopCommands
	info := t.info
	t.srv.events.publish(EventEnd, info.ID, t.summaryLocked())
	t.mu.Unlock()
	s.saveNow(t)

	s.mu.Lock()
	s.ended = append(s.ended, info.ID)
	var evicted []string
	for len(s.ended) > s.opts.KeepTasks {
		delete(s.tasks, s.ended[0])
		evicted = append(evicted, s.ended[0])
		s.ended = s.ended[1:]
	}
	s.mu.Unlock()
	close(t.done)
	for _, id := range evicted {
		ctx, cancel := storeCtx()
		if err := s.store.DeleteTask(ctx, id); err != nil {
			s.logf("task %s: not removed from the store: %v", id, err)
		}
		cancel()
	}
	s.logf("task %s %s %s", info.ID, info.Status, info.Error)
	s.forgetIfGone(t.target)
	if !sendEnd {
		return
	}
	end := taskEnd(info, out)
	if stop && end.Status == aip.StatusFailed {
		end.Result = stopResult(info.Error, info.Result)
	}
	s.sendOrQueue(t.target, end)
	s.tellRequester(t, end)
}

// taskEnd is the task_end frame for an ended task.
func taskEnd(info TaskInfo, out *agent.Outcome) *aip.ServerMessage {
	m := &aip.ServerMessage{Type: aip.TypeTaskEnd, Status: aip.StatusCompleted, SessionID: info.ID,
		ResponseID: uuid.New(), Timestamp: aip.Timestamp(time.Now())}
	result := map[string]any{"answer": info.Result, "steps": len(info.Steps)}
	if out != nil {
		result["status"] = out.Status
	}
	if info.Status != StatusCompleted {
		m.Status, m.Error = aip.StatusFailed, info.Error
		result = map[string]any{"failure": info.Error, "answer": info.Result}
	}
	m.Result, _ = json.Marshal(result)
	return m
}

// stopResult is the result of a failed task_end that tells the device to
// stop the task's commands still running: the server gave up on it.
func stopResult(failure, answer string) json.RawMessage {
	r := map[string]any{"failure": failure, aip.ResultStopCommands: true}
	if answer != "" {
		r["answer"] = answer
	}
	b, _ := json.Marshal(r)
	return b
}

// endTask ends a running task early with status and cause: the device is
// told at once (task_end failed), so that it stops between commands, and
// the agents' context is cancelled.
func (s *Server) endTask(t *task, status TaskStatus, cause error) bool {
	t.mu.Lock()
	if t.ended() || t.endStatus != "" {
		t.mu.Unlock()
		return false
	}
	t.endStatus, t.endCause, t.endSent = status, cause, true
	id, stop := t.info.ID, t.stopCommands
	t.mu.Unlock()
	end := &aip.ServerMessage{Type: aip.TypeTaskEnd, Status: aip.StatusFailed, SessionID: id, Error: cause.Error(),
		ResponseID: s.opts.NewID(), Timestamp: aip.Timestamp(time.Now())}
	end.Result, _ = json.Marshal(map[string]any{"failure": cause.Error()})
	if stop {
		end.Result = stopResult(cause.Error(), "")
	}
	s.sendOrQueue(t.target, end)
	s.tellRequester(t, end)
	t.cancel(cause)
	return true
}

// Task returns a task by id.
func (s *Server) Task(id string) (TaskInfo, bool) {
	s.mu.Lock()
	t := s.tasks[id]
	s.mu.Unlock()
	if t == nil {
		return TaskInfo{}, false
	}
	return t.snapshot(), true
}

// Wait waits until a task of this server has ended, and its end is in
// the store, or ctx is done, and returns the task as it is then: a
// caller that must know how a task ended need not poll Task. A task that
// stops running here without ending (the server stops, or its device
// moved to another server that resumes it) is returned still running.
func (s *Server) Wait(ctx context.Context, id string) (TaskInfo, error) {
	s.mu.Lock()
	t := s.tasks[id]
	s.mu.Unlock()
	if t == nil {
		return TaskInfo{}, fmt.Errorf("%w: %q", ErrNoTask, id)
	}
	select {
	case <-t.done:
	case <-ctx.Done():
	case <-s.ctx.Done(): // stopped: a restored task waiting for its device never starts here
	}
	return t.snapshot(), nil
}

// Tasks lists the known tasks, newest first.
func (s *Server) Tasks() []TaskInfo {
	s.mu.Lock()
	ts := make([]*task, 0, len(s.tasks))
	for _, t := range s.tasks {
		ts = append(ts, t)
	}
	s.mu.Unlock()
	out := make([]TaskInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.snapshot())
	}
	sortTasks(out)
	return out
}

// sortTasks orders tasks newest first.
func sortTasks(ts []TaskInfo) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].CreatedAt.After(ts[j].CreatedAt) })
}

// Errors of Cancel.
var (
	ErrNoTask     = errors.New("no such task")
	ErrNotRunning = errors.New("the task is not running")
)

// Cancel cancels a running task: its device is told, stops between
// commands, and the task ends as cancelled.
func (s *Server) Cancel(id, by string) (TaskInfo, error) {
	s.mu.Lock()
	t := s.tasks[id]
	s.mu.Unlock()
	if t == nil {
		return TaskInfo{}, fmt.Errorf("%w: %q", ErrNoTask, id)
	}
	if !s.endTask(t, StatusCancelled, fmt.Errorf("cancelled by %s", by)) {
		return t.snapshot(), ErrNotRunning
	}
	<-t.done
	return t.snapshot(), nil
}

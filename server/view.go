package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
)

// What the API shows of a task's work beyond its lifecycle: each step's
// commands with their results, the model's decisions as they come, the
// tokens and cost, the screenshots the model saw, and running commands'
// progress. Texts go through Options.Redact first, as a recording's do.

// ActionInfo is one command of a step, with its result.
type ActionInfo struct {
	CallID    string `json:"call_id,omitempty"`
	Tool      string `json:"tool"`
	Namespace string `json:"namespace,omitempty"`
	// Call is the command as a line: namespace.tool{arguments} (long
	// arguments cut).
	Call string `json:"call"`
	// Status is the result's (success, failure, skipped), empty when it
	// did not run.
	Status string `json:"status,omitempty"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Screenshot is the screenshot a model saw in a step, with the point the
// step clicked: GET /api/tasks/{id}/screenshots/{sha256} (or, from a
// recording, /api/runs/{id}/artifacts/{sha256}.png) serves the image.
type Screenshot struct {
	SHA256    string `json:"sha256"`
	MediaType string `json:"media_type"`
	// Width and Height are the image's size in pixels, when known.
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	// X and Y are the clicked point in image pixels, when Clicked.
	X       float64 `json:"x,omitempty"`
	Y       float64 `json:"y,omitempty"`
	Clicked bool    `json:"clicked,omitempty"`
	// URL is where the API serves the image.
	URL string `json:"url"`
}

// DecisionInfo is a model's decision, as soon as it is understood.
type DecisionInfo struct {
	Agent   string   `json:"agent"`
	Round   int      `json:"round"`
	Step    int      `json:"step"`
	Status  string   `json:"status"`
	Thought string   `json:"thought,omitempty"`
	Actions []string `json:"actions,omitempty"`
}

// ProgressInfo is a running command's latest progress: what the tool
// reported (progress out of total, a message) and its latest output
// lines.
type ProgressInfo struct {
	CallID    string    `json:"call_id"`
	Progress  float64   `json:"progress"`
	Total     float64   `json:"total,omitempty"`
	Message   string    `json:"message,omitempty"`
	Lines     []string  `json:"lines,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// TaskSummary is a task in the server's stream: what a list shows, with
// its open questions and approvals.
type TaskSummary struct {
	ID        string     `json:"id"`
	ClientID  string     `json:"client_id"`
	TaskName  string     `json:"task_name"`
	Request   string     `json:"request"`
	Status    TaskStatus `json:"status"`
	QueuedBy  string     `json:"queued_by"`
	CreatedAt time.Time  `json:"created_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Error     string     `json:"error,omitempty"`
	Steps     int        `json:"steps"`
	// Usage, Cost and CostUSD are the task's (see TaskInfo).
	Usage   llm.Usage `json:"usage"`
	Cost    string    `json:"cost,omitempty"`
	CostUSD *float64  `json:"cost_usd,omitempty"`
	// Open are its questions and approvals waiting for a person.
	Open []PendingInfo `json:"open"`
}

// Cuts of the texts the API shows (the recording has them whole).
const (
	cutCall   = 400
	cutOutput = 4000
	cutLine   = 400
)

// summary is the task's summary. Called with t.mu held.
func (t *task) summaryLocked() TaskSummary {
	i := &t.info
	sum := TaskSummary{ID: i.ID, ClientID: i.ClientID, TaskName: i.TaskName, Request: i.Request, Status: i.Status, QueuedBy: i.QueuedBy,
		CreatedAt: i.CreatedAt, EndedAt: i.EndedAt, Error: i.Error, Steps: i.StepsOmitted + len(i.Steps), Usage: i.Usage, Cost: i.Cost, CostUSD: i.CostUSD, Open: []PendingInfo{}}
	for _, it := range t.pending {
		if it.Status == "open" {
			sum.Open = append(sum.Open, *it)
		}
	}
	return sum
}

// summaryOf is the summary of a task known from its record.
func summaryOf(i TaskInfo) TaskSummary {
	sum := TaskSummary{ID: i.ID, ClientID: i.ClientID, TaskName: i.TaskName, Request: i.Request, Status: i.Status, QueuedBy: i.QueuedBy,
		CreatedAt: i.CreatedAt, EndedAt: i.EndedAt, Error: i.Error, Steps: i.StepsOmitted + len(i.Steps), Usage: i.Usage, Cost: i.Cost, CostUSD: i.CostUSD, Open: []PendingInfo{}}
	for _, it := range i.Pending {
		if it.Status == "open" {
			sum.Open = append(sum.Open, it)
		}
	}
	return sum
}

// publishLocked sends an event about the task and, when it changes what
// a list shows, its summary. Called with t.mu held, so that a task's
// events go out in the order of its changes.
func (t *task) publishLocked(typ string, v any) {
	h := t.srv.events
	if !h.wanted() {
		return
	}
	if typ != "" {
		h.publish(typ, t.info.ID, v)
	}
	if typ != EventCommand && typ != EventProgress && typ != EventDecision {
		h.publish(EventTask, t.info.ID, t.summaryLocked())
	}
}

// redact hides secrets in a text the API shows.
func (s *Server) redact(text string) string {
	if s.opts.Redactor == nil || text == "" {
		return text
	}
	return s.opts.Redactor.String(text)
}

// cut shortens a text to at most n bytes, on a rune boundary.
func cut(text string, n int) string {
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n] + fmt.Sprintf("… (%d bytes in all)", len(text))
}

// stepDetails fills a step's commands, results, tokens and screenshot
// from its agent event.
func (t *task) stepDetails(st *StepInfo, e agent.Event) {
	s := t.srv
	if e.Decision != nil {
		st.Thought = s.redact(st.Thought)
		st.Result = cut(s.redact(e.Decision.Result), cutOutput)
	}
	st.Error = s.redact(st.Error)
	if e.Usage != (llm.Usage{}) {
		u := e.Usage
		st.Usage = &u
	}
	for i, c := range e.Commands {
		a := ActionInfo{CallID: c.CallID, Tool: c.ToolName, Namespace: c.Namespace, Call: cut(s.redact(callLine(c)), cutCall)}
		if i < len(e.Results) {
			r := e.Results[i]
			a.Status = string(r.Status)
			if r.OK() {
				a.Output = cut(s.redact(resultText(r)), cutOutput)
			} else {
				a.Error = cut(s.redact(r.Error), cutOutput)
			}
		}
		st.Actions = append(st.Actions, a)
	}
}

// callLine is a command as a line, namespace.tool{arguments}, its JSON
// as written (command.String escapes <, > and & for HTML).
func callLine(c command.Command) string {
	name := c.ToolName
	if c.Namespace != "" {
		name = c.Namespace + "." + name
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if c.Parameters == nil {
		return name + "{}"
	}
	enc.Encode(c.Parameters)
	return name + strings.TrimSuffix(b.String(), "\n")
}

// resultText is a result's payload as text: a JSON string's value, else
// the JSON.
func resultText(r command.Result) string {
	var s string
	if json.Unmarshal(r.Result, &s) == nil {
		return s
	}
	return string(r.Result)
}

// watchAgents takes what the API shows beyond steps from a task's agent
// events: decisions as they come, the screenshots the models saw.
func (t *task) watchAgents(e agent.Event) {
	switch e.Kind {
	case agent.EventDecision:
		if e.Decision == nil || !t.srv.events.wanted() {
			return
		}
		d := DecisionInfo{Agent: e.Agent, Round: e.Round, Step: e.Step, Status: string(e.Decision.Status), Thought: t.srv.redact(e.Decision.Thought)}
		for _, a := range e.Decision.Actions {
			args, _ := json.Marshal(a.Arguments)
			d.Actions = append(d.Actions, cut(t.srv.redact(a.Function+string(args)), cutCall))
		}
		t.mu.Lock()
		t.publishLocked(EventDecision, d)
		t.mu.Unlock()
	case agent.EventModelCall:
		if e.Request == nil {
			return
		}
		if shot := lastImage(e.Request.Messages); shot != nil {
			t.mu.Lock()
			if t.lastShot == nil {
				t.lastShot = map[string]*shotData{}
			}
			t.lastShot[e.Agent] = shot
			t.mu.Unlock()
		}
	}
}

// shotData is a screenshot a model saw.
type shotData struct {
	sha, mediaType string
	data           []byte
}

// lastImage is the last image in a model request's messages.
func lastImage(msgs []llm.Message) *shotData {
	for i := len(msgs) - 1; i >= 0; i-- {
		imgs := msgs[i].Images
		for j := len(imgs) - 1; j >= 0; j-- {
			if img := imgs[j]; len(img.Data) > 0 {
				sum := sha256.Sum256(img.Data)
				mt := img.MIMEType
				if mt == "" {
					mt = "image/png"
				}
				return &shotData{sha: hex.EncodeToString(sum[:]), mediaType: mt, data: img.Data}
			}
		}
	}
	return nil
}

// keptShots is how many screenshots a task keeps in memory for the API
// (older ones are read from its recording, when there is one).
const keptShots = 8

// attachShot gives a step the screenshot its agent's model saw last, and
// keeps the image. Called with t.mu held.
func (t *task) attachShotLocked(st *StepInfo, e agent.Event) {
	shot := t.lastShot[e.Agent]
	if shot == nil {
		return
	}
	delete(t.lastShot, e.Agent)
	w, h := pngSize(shot.data)
	sc := &Screenshot{SHA256: shot.sha, MediaType: shot.mediaType, Width: w, Height: h,
		URL: "/api/tasks/" + t.info.ID + "/screenshots/" + shot.sha}
	sc.X, sc.Y, sc.Clicked = command.Point(e.Commands, e.Results)
	st.Screenshot = sc
	t.shots = append(t.shots, shot)
	if len(t.shots) > keptShots {
		t.shots = t.shots[len(t.shots)-keptShots:]
	}
}

var hexName = regexp.MustCompile(`^[0-9a-f]{64}$`)

// screenshot answers GET /api/tasks/{id}/screenshots/{sha}: from memory,
// else from the task's recording.
func (s *Server) screenshot(w http.ResponseWriter, r *http.Request) {
	id, sha := r.PathValue("id"), r.PathValue("sha")
	if !hexName.MatchString(sha) {
		writeError(w, fmt.Errorf("%w: %q is not a screenshot's SHA-256 (64 hex digits)", ErrBadRequest, sha))
		return
	}
	s.mu.Lock()
	t := s.tasks[id]
	s.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		var found *shotData
		for _, sh := range t.shots {
			if sh.sha == sha {
				found = sh
			}
		}
		t.mu.Unlock()
		if found != nil {
			w.Header().Set("Content-Type", found.mediaType)
			w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
			w.Write(found.data)
			return
		}
	}
	if s.opts.RunsDir != "" && safeName(id) {
		matches, _ := filepath.Glob(filepath.Join(s.opts.RunsDir, id, "artifacts", sha+".*"))
		if len(matches) > 0 {
			w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
			http.ServeFile(w, r, matches[0])
			return
		}
	}
	writeError(w, fmt.Errorf("%w: task %s has no screenshot %s here (the server keeps its latest %d; older ones are read from its recording)", ErrNoTask, id, sha, keptShots))
}

// safeName reports a name that is one path element, not a way out.
func safeName(name string) bool {
	return name != "" && name != "." && name != ".." && filepath.Base(name) == name && !filepath.IsAbs(name)
}

// ErrUnknownCommand: the task has no running command with that call id.
var ErrUnknownCommand = errors.New("no running command with that call id")

// commandProgress is how a running command's progress reaches the API:
// the task of device clientID that runs the command p.CallID keeps it as
// the command's latest (GET /api/tasks/{id} shows it in progress) and its
// stream sends it (a progress event), and Options.OnProgress is told.
// Progress for a command that has ended, or that no task here runs, is
// dropped (ErrUnknownCommand). A device's reports come here from its
// connection's reader (see start).
func (s *Server) commandProgress(clientID string, p ProgressInfo) error {
	s.mu.Lock()
	var ts []*task
	for _, t := range s.tasks {
		if t.info.ClientID == clientID && !t.ended() {
			ts = append(ts, t)
		}
	}
	s.mu.Unlock()
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = time.Now().UTC()
	}
	p.Message = cut(s.redact(p.Message), cutLine)
	for i, l := range p.Lines {
		p.Lines[i] = cut(s.redact(l), cutLine)
	}
	for _, t := range ts {
		t.mu.Lock()
		i, ok := t.cmdIndex[p.CallID]
		if ok && !t.info.Commands[i].State.Terminal() {
			if t.progress == nil {
				t.progress = map[string]ProgressInfo{}
			}
			t.progress[p.CallID] = p
			t.publishLocked(EventProgress, p)
			id := t.info.ID
			t.mu.Unlock()
			if s.opts.OnProgress != nil {
				s.opts.OnProgress(id, p)
			}
			return nil
		}
		t.mu.Unlock()
	}
	return fmt.Errorf("%w: %s on %s", ErrUnknownCommand, p.CallID, clientID)
}

// progressListLocked is the latest progress of the task's running
// commands, in the order of its commands. Called with t.mu held.
func (t *task) progressListLocked() []ProgressInfo {
	if len(t.progress) == 0 {
		return nil
	}
	var out []ProgressInfo
	for _, c := range t.info.Commands {
		if p, ok := t.progress[c.CallID]; ok && !c.State.Terminal() {
			out = append(out, p)
		}
	}
	return out
}

// commandChangedLocked publishes a command's new state; a command that
// ended drops its progress. Called with t.mu held.
func (t *task) commandChangedLocked(cs dispatcher.CommandState) {
	if cs.State.Terminal() {
		delete(t.progress, cs.CallID)
	}
	// Asked before cs is boxed for publishLocked: most rounds have nobody
	// watching, and the box cost every command state change an allocation.
	if t.srv.events.wanted() {
		t.publishLocked(EventCommand, cs)
	}
}

// pngSize reads a PNG's size from its header; zero when it is not one.
func pngSize(b []byte) (int, int) {
	c, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0, 0
	}
	return c.Width, c.Height
}

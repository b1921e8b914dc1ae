package remote

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/uuid"
)

// The journal is a small file of the command rounds a device client has
// started: a line when a round begins, before and after each command, and
// its results at the end. A client that starts again after a crash reads
// it: a round that had finished is answered from it when the server sends
// the frame again, and a round cut short is reported at once, its
// interrupted command as a failure whose outcome is unknown (it may or
// may not have taken effect), the commands after it as not run. Nothing
// that was started runs twice.
//
// Lines are written with one write each, without fsync: they survive the
// client being killed (the kernel has them), not the machine losing power.

// journalLine is one line of the journal.
type journalLine struct {
	// ResponseID names the round (the frame's response_id).
	ResponseID string `json:"r"`
	// Begin: the round's session, status and commands.
	Session string    `json:"session,omitempty"`
	Status  string    `json:"status,omitempty"`
	Calls   []jcall   `json:"calls,omitempty"`
	At      time.Time `json:"at,omitzero"`
	// Start and Done: command Index starts, or ended with Result.
	Start  *int            `json:"start,omitempty"`
	Done   *int            `json:"done,omitempty"`
	Result *command.Result `json:"result,omitempty"`
	// Results: the round ended with this frame.
	Results *aip.ClientMessage `json:"results,omitempty"`
}

type jcall struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
}

// journal appends lines to the journal file.
type journal struct {
	mu       sync.Mutex
	path     string
	f        *os.File
	clientID string
	finished int // rounds finished since the file was last compacted
}

// compactAfter is how many finished rounds the file may gather before it
// is rewritten with the most recent ones only.
const compactAfter = 4 * recentRounds

// openJournal reads the journal at path (a missing file is an empty
// journal), rewrites it compacted, and returns it with the results of the
// rounds it knows, oldest first; interrupted are those cut short, to be
// reported to the server.
func openJournal(path, clientID string) (j *journal, known, interrupted []*aip.ClientMessage, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("journal: %w", err)
	}
	known, interrupted, err = readJournal(path, clientID)
	if err != nil {
		return nil, nil, nil, err
	}
	j = &journal{path: path, clientID: clientID}
	if err := j.rewrite(known); err != nil {
		return nil, nil, nil, err
	}
	return j, known, interrupted, nil
}

// readJournal replays the file's lines into each round's results.
func readJournal(path, clientID string) (known, interrupted []*aip.ClientMessage, _ error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	type round struct {
		begin   journalLine
		started map[int]bool
		done    map[int]command.Result
		results *aip.ClientMessage
	}
	rounds := map[string]*round{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var l journalLine
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.ResponseID == "" {
			continue // a line cut short by the crash
		}
		r := rounds[l.ResponseID]
		if r == nil {
			r = &round{started: map[int]bool{}, done: map[int]command.Result{}}
			rounds[l.ResponseID] = r
			order = append(order, l.ResponseID)
		}
		switch {
		case l.Results != nil:
			r.results = l.Results
		case l.Start != nil:
			r.started[*l.Start] = true
		case l.Done != nil && l.Result != nil:
			r.done[*l.Done] = *l.Result
		case l.Calls != nil:
			r.begin = l
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("journal %s: %w", path, err)
	}
	for _, id := range order {
		r := rounds[id]
		if r.results != nil {
			known = append(known, r.results)
			continue
		}
		if r.begin.Calls == nil {
			continue
		}
		results := make([]command.Result, len(r.begin.Calls))
		for i, c := range r.begin.Calls {
			switch res, done := r.done[i]; {
			case done:
				results[i] = res
			case r.started[i]:
				results[i] = command.Failed(c.CallID, fmt.Sprintf("interrupted: the device client stopped while %s ran; "+
					"whether it took effect is unknown (it was not run again): check before retrying it", c.Tool))
			default:
				results[i] = command.SkippedResult(c.CallID, "not run: the device client stopped before it")
			}
			results[i].CallID = c.CallID
		}
		m := &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.Status(r.begin.Status), ClientType: aip.ClientDevice,
			ClientID: clientID, SessionID: r.begin.Session, ActionResults: results, PrevResponseID: id,
			RequestID: uuid.New(), Timestamp: aip.Timestamp(time.Now())}
		known = append(known, m)
		interrupted = append(interrupted, m)
	}
	if len(known) > recentRounds {
		known = known[len(known)-recentRounds:]
	}
	return known, interrupted, nil
}

// rewrite replaces the file with the results of rounds, atomically, and
// opens it for appending.
func (j *journal) rewrite(rounds []*aip.ClientMessage) error {
	tmp := j.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, m := range rounds {
		enc.Encode(journalLine{ResponseID: m.PrevResponseID, Results: m})
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	f.Sync()
	f.Close()
	if err := os.Rename(tmp, j.path); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if j.f != nil {
		j.f.Close()
	}
	j.f, err = os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.finished = 0
	return nil
}

// write appends one line.
func (j *journal) write(l journalLine) error {
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errJournalClosed
	}
	_, err = j.f.Write(append(b, '\n'))
	return err
}

var errJournalClosed = errors.New("journal: closed (the client was closed)")

func (j *journal) begin(m *aip.ServerMessage) error {
	calls := make([]jcall, len(m.Actions))
	for i, a := range m.Actions {
		calls[i] = jcall{CallID: a.CallID, Tool: a.ToolName}
	}
	return j.write(journalLine{ResponseID: m.ResponseID, Session: m.SessionID, Status: string(m.Status), Calls: calls, At: time.Now().UTC()})
}

func (j *journal) start(responseID string, i int) error {
	return j.write(journalLine{ResponseID: responseID, Start: &i})
}

func (j *journal) done(responseID string, i int, r command.Result) error {
	return j.write(journalLine{ResponseID: responseID, Done: &i, Result: &r})
}

// finish records a round's results; now and then the file is compacted
// to the recent rounds (keep).
func (j *journal) finish(m *aip.ClientMessage, keep func() []*aip.ClientMessage) error {
	if err := j.write(journalLine{ResponseID: m.PrevResponseID, Results: m}); err != nil {
		return err
	}
	j.mu.Lock()
	j.finished++
	full := j.finished >= compactAfter
	j.mu.Unlock()
	if full {
		rounds := keep()
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.rewrite(rounds)
	}
	return nil
}

// close closes the file; a second close does nothing.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

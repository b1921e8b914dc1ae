package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/saucerhq/saucer/llm"
)

// Trajectory is a recorded session read back: its events in order, with
// every artifact reference replaced by the value it stands for.
type Trajectory struct {
	Dir    string
	Events []Event
	// Torn is the length of a last line that was cut in the middle (a
	// crash while it was written) and is left out; 0 when there is none.
	Torn int
}

// Read reads the trajectory in dir. It checks that lines are numbered from
// 1 without gaps, that each has the fields its type requires, that the
// first is a session_start of a format this package reads, and that every
// artifact matches its digest. A last line cut in the middle (it has no
// newline and does not decode) is left out and counted in Torn: what was
// written before it stands.
func Read(dir string) (*Trajectory, error) {
	f, err := os.Open(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, fmt.Errorf("trajectory: %w (is %s a recorded run directory?)", err, dir)
	}
	defer f.Close()
	events, torn, err := decode(f, dir)
	if err != nil {
		return nil, fmt.Errorf("trajectory %s: %w", dir, err)
	}
	return &Trajectory{Dir: dir, Events: events, Torn: torn}, nil
}

// Decode reads event lines from r; artifacts are looked up under dir. A
// last line cut in the middle is an error here (Read leaves it out).
func Decode(r io.Reader, dir string) ([]Event, error) {
	events, torn, err := decode(r, dir)
	if err == nil && torn > 0 {
		err = fmt.Errorf("line %d is cut after %d bytes", len(events)+1, torn)
	}
	return events, err
}

func decode(r io.Reader, dir string) (events []Event, torn int, err error) {
	res := &resolver{dir: dir, cache: map[string]any{}}
	br := bufio.NewReaderSize(r, 1<<20)
	calls := map[int]*Call{} // full requests by call number, for bases
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, 0, rerr
		}
		if len(line) == 0 && rerr == io.EOF {
			break
		}
		whole := rerr == nil // ends in a newline
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, 0, fmt.Errorf("line %d is empty", n)
		}
		e, err := decodeLine(line, res)
		if err != nil && !whole && n > 1 {
			// The last line stops in the middle: written when the
			// process died. What came before it is the recording.
			return events, len(line), nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", n, err)
		}
		if e.Seq != n {
			return nil, 0, fmt.Errorf("line %d has seq %d: lines must be numbered from 1 without gaps", n, e.Seq)
		}
		if err := check(e, line); err != nil {
			return nil, 0, fmt.Errorf("line %d (%s): %w", n, e.Type, err)
		}
		if n == 1 {
			if e.Type != TypeSessionStart {
				return nil, 0, fmt.Errorf("line 1 is %s; a trajectory starts with session_start", e.Type)
			}
			if major(e.Session.Format) != major(Format) {
				return nil, 0, fmt.Errorf("format %q is not %q: this Saucer cannot read it", e.Session.Format, Format)
			}
		}
		if e.Type == TypeModelCall && e.Call != nil {
			if err := rebuild(e.Call, calls); err != nil {
				return nil, 0, fmt.Errorf("line %d: %w", n, err)
			}
			calls[e.Call.N] = e.Call
		}
		events = append(events, e)
		if !whole {
			break
		}
	}
	if len(events) == 0 {
		return nil, 0, fmt.Errorf("no events")
	}
	return events, 0, nil
}

// rebuild makes c's request whole again from the earlier call it builds
// on. The messages it takes from there are shared, not copied: a long
// recording's requests cost memory in proportion to their own messages.
func rebuild(c *Call, calls map[int]*Call) error {
	b := c.Base
	if b == nil {
		return nil
	}
	base, ok := calls[b.Call]
	if !ok || b.Call >= c.N {
		return fmt.Errorf("model call %d builds on call %d, which comes nowhere before it", c.N, b.Call)
	}
	if b.Messages > len(base.Request.Messages) {
		return fmt.Errorf("model call %d takes %d messages of call %d, which has %d", c.N, b.Messages, b.Call, len(base.Request.Messages))
	}
	msgs := make([]llm.Message, 0, b.Messages+len(c.Request.Messages))
	c.Request.Messages = append(append(msgs, base.Request.Messages[:b.Messages]...), c.Request.Messages...)
	if b.Tools {
		c.Request.Tools = base.Request.Tools
	}
	c.Base = nil
	return nil
}

// major is a format's name and major version: "saucer.trajectory/v1" for
// "saucer.trajectory/v1.2".
func major(format string) string {
	name, ver, _ := strings.Cut(format, "/")
	ver, _, _ = strings.Cut(ver, ".")
	return name + "/" + ver
}

func decodeLine(line []byte, res *resolver) (Event, error) {
	var e Event
	if bytes.Contains(line, []byte(`"`+ArtifactKey+`"`)) {
		v, err := decodeGeneric(line)
		if err != nil {
			return e, err
		}
		if v, err = res.internalize(v); err != nil {
			return e, err
		}
		if line, err = json.Marshal(v); err != nil {
			return e, err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, err
	}
	return e, nil
}

// check verifies that a line has the fields its type requires.
func check(e Event, line []byte) error {
	need, ok := required[e.Type]
	if !ok {
		return fmt.Errorf("unknown event type %q", e.Type)
	}
	if e.Time.IsZero() {
		return fmt.Errorf("no time")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return err
	}
	for _, f := range need {
		if _, ok := fields[f]; !ok {
			return fmt.Errorf("missing %q", f)
		}
	}
	return nil
}

// Session is the session_start description.
func (t *Trajectory) Session() *Session { return t.Events[0].Session }

// End is the session_end description, nil when the session did not end
// (an interrupted recording).
func (t *Trajectory) End() *End {
	for i := len(t.Events) - 1; i >= 0; i-- {
		if t.Events[i].Type == TypeSessionEnd {
			return t.Events[i].End
		}
	}
	return nil
}

// Stops says where a recording that has no session_end stops (a full
// disk, a crash): its last event, the step it belongs to and whether that
// step was recorded whole. It is "" for a recording of a session that
// ended.
func (t *Trajectory) Stops() string {
	if t.End() != nil {
		return ""
	}
	last := t.Events[len(t.Events)-1]
	s := fmt.Sprintf("the recording stops after event %d (%s", last.Seq, last.Type)
	if last.Agent != "" {
		s += " of " + last.Agent
		if last.Step > 0 {
			s += fmt.Sprintf(" step %d", last.Step)
		}
	}
	s += ") with no session_end"
	if t.Torn > 0 {
		s += fmt.Sprintf("; the line after it is torn after %d bytes and left out", t.Torn)
	}
	// The last step recorded whole: its step event came.
	for i := len(t.Events) - 1; i >= 0; i-- {
		if e := t.Events[i]; e.Type == TypeStep {
			return s + fmt.Sprintf("; the last whole step is %s step %d", e.Agent, e.Step)
		}
	}
	return s + "; no step was recorded whole"
}

// Of returns the events of one type, in order.
func (t *Trajectory) Of(typ Type) []Event {
	var out []Event
	for _, e := range t.Events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Calls returns the model calls, in order.
func (t *Trajectory) Calls() []Call {
	var out []Call
	for _, e := range t.Events {
		if e.Type == TypeModelCall {
			out = append(out, *e.Call)
		}
	}
	return out
}

package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
)

// progressLines bounds the output lines a progress report shows.
const progressLines = 5

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

// progressInfo is what the API shows of a device's report: the message's
// latest lines are a shell command's latest output.
func progressInfo(p command.Progress) ProgressInfo {
	info := ProgressInfo{CallID: p.CallID, Progress: p.Progress, Total: p.Total, Message: p.Message}
	if p.Message != "" {
		info.Lines = strings.Split(p.Message, "\n")
		if len(info.Lines) > progressLines {
			info.Lines = info.Lines[len(info.Lines)-progressLines:]
		}
	}
	return info
}

// ErrUnknownCommand: the task has no running command with that call id.
var ErrUnknownCommand = errors.New("no running command with that call id")

// commandProgress is how a running command's progress reaches the API:
// the task of device clientID that runs the command p.CallID keeps it as
// the command's latest (GET /api/tasks/{id} shows it in progress) and
// Options.OnProgress is told. Progress for a command that has ended, or
// that no task here runs, is dropped (ErrUnknownCommand). A device's
// reports come here from its connection's reader (see start).
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
	for _, t := range ts {
		t.mu.Lock()
		i, ok := t.cmdIndex[p.CallID]
		if ok && !t.info.Commands[i].State.Terminal() {
			if t.progress == nil {
				t.progress = map[string]ProgressInfo{}
			}
			t.progress[p.CallID] = p
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

// Package knowledge is what Saucer's agents learn from: experience
// (recorded runs, summarised), demonstrations (runs a person drove, kept as
// examples) and help documents (man pages, --help output, HTML, Markdown
// and XML help files), kept in a Store with a lexical index (bleve, BM25)
// and, when an Embedder is set, vectors beside it; a search fuses the two.
//
// Every entry names its Source: a recording's directory and the events
// and steps it was drawn from, or a help file and its section, so that
// any tip an agent is given can be traced to what happened.
//
// Learn draws entries from a recording without a model: the request, the
// host's plan, each app agent's tool sequence and the steps that
// mattered, the outcome and the answer. A failed run is kept too, marked
// as what not to do. Every string an entry keeps passes the redactor
// first (recordings are redacted when written; Learn does not rely on it).
package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Kind says what an entry was learned from.
type Kind string

// The kinds of entries.
const (
	// Experience is a recorded run, summarised: what was asked, the plan,
	// the steps that mattered, the outcome.
	Experience Kind = "experience"
	// Demonstration is a run a person drove (or showed), kept as an
	// example to follow.
	Demonstration Kind = "demonstration"
	// Help is a passage of an app's documentation.
	Help Kind = "help"
)

// Kinds lists every kind.
var Kinds = []Kind{Experience, Demonstration, Help}

// ParseKind reads a kind's name.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("knowledge: unknown kind %q: give experience, demonstration or help", s)
}

// Outcome says how a learned run ended.
type Outcome string

// The outcomes of runs; help passages have none.
const (
	Succeeded Outcome = "succeeded"
	// Failed marks a run that failed: its entry teaches what not to do.
	Failed Outcome = "failed"
)

// Source says where an entry came from.
type Source struct {
	// Recording is a recorded run's directory (experience, demonstration).
	Recording string `json:"recording,omitempty"`
	// Session is the recorded session's id.
	Session string `json:"session,omitempty"`
	// Agent is the agent the entry follows ("host" for a whole run,
	// "app:shell#1" for one subtask).
	Agent string `json:"agent,omitempty"`
	// Events are the first and last event numbers (seq) drawn on; Steps
	// the agent's steps that the entry lists.
	Events [2]int `json:"events,omitzero"`
	Steps  []int  `json:"steps,omitempty"`
	// Path and Section name a help document and the part of it (help),
	// or a Steps Recorder file and its steps (a demonstration).
	Path    string `json:"path,omitempty"`
	Section string `json:"section,omitempty"`
}

// String names the source as an agent or a person reads it:
// "runs/2025…/ events 6-17 (app:shell#1 steps 1,2)", "man tar §
// OPTIONS" or "save-note.zip § steps 1-5".
func (s Source) String() string {
	if s.Recording != "" {
		out := s.Recording
		if s.Events[0] > 0 {
			out += fmt.Sprintf(" events %d-%d", s.Events[0], s.Events[1])
		}
		if s.Agent != "" {
			out += " (" + s.Agent
			if len(s.Steps) > 0 {
				steps := make([]string, len(s.Steps))
				for i, n := range s.Steps {
					steps[i] = fmt.Sprint(n)
				}
				out += " steps " + strings.Join(steps, ",")
			}
			out += ")"
		}
		return out
	}
	if s.Section != "" {
		return s.Path + " § " + s.Section
	}
	return s.Path
}

// Entry is one thing learned.
type Entry struct {
	// ID is stable: learning the same run or document again replaces its
	// entries instead of adding copies.
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// App is the app the entry is about; empty for a whole run, whose
	// apps are in Apps.
	App  string   `json:"app,omitempty"`
	Apps []string `json:"apps,omitempty"`
	// Title is the request or subtask (experience), or the document and
	// section (help).
	Title string `json:"title"`
	Text  string `json:"text"`
	// Outcome is set for runs: a failed run is what not to do.
	Outcome Outcome `json:"outcome,omitempty"`
	Source  Source  `json:"source"`
}

// Label is how an entry is introduced: "experience (succeeded)",
// "experience (failed: what not to do)", "help".
func (e Entry) Label() string {
	switch e.Outcome {
	case Succeeded:
		return string(e.Kind) + " (succeeded)"
	case Failed:
		return string(e.Kind) + " (failed: what not to do)"
	}
	return string(e.Kind)
}

// check says what is wrong with an entry before it is stored.
func (e Entry) check() error {
	switch {
	case e.ID == "":
		return fmt.Errorf("knowledge: entry %q has no id", e.Title)
	case strings.TrimSpace(e.Text) == "":
		return fmt.Errorf("knowledge: entry %s has no text", e.ID)
	}
	if _, err := ParseKind(string(e.Kind)); err != nil {
		return fmt.Errorf("entry %s: %w", e.ID, err)
	}
	return nil
}

// idOf makes a stable id from the parts that identify an entry.
func idOf(kind Kind, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return string(kind)[:1] + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

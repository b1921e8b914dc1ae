package trajectory

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

// TestEventOutEncodesAsEvent: the writer's form of an event has Event's
// fields, in order, and encodes to the bytes json.Marshal gives for the
// event itself: for an event with every field set (commands and results
// with and without their optional parts, a payload with spaces and HTML
// characters) and for each event of a served task.
func TestEventOutEncodesAsEvent(t *testing.T) {
	et, ot := reflect.TypeFor[Event](), reflect.TypeFor[eventOut]()
	if et.NumField() != ot.NumField() {
		t.Fatalf("Event has %d fields, eventOut %d: give eventOut and Event.out the new field", et.NumField(), ot.NumField())
	}
	for i := range et.NumField() {
		ef, of := et.Field(i), ot.Field(i)
		if ef.Name != of.Name || ef.Tag.Get("json") != of.Tag.Get("json") ||
			ef.Type != of.Type && ef.Name != "Commands" && ef.Name != "Results" {
			t.Errorf("field %d: Event's %s %s `json:%q`, eventOut's %s %s `json:%q`", i, ef.Name, ef.Type, ef.Tag.Get("json"), of.Name, of.Type, of.Tag.Get("json"))
		}
	}

	usage := llm.Usage{PromptTokens: 3, CompletionTokens: 4}
	full := Event{Seq: 7, Time: time.Date(2026, 11, 26, 13, 0, 0, 123, time.UTC), Type: TypeStep, Agent: "app:files#1", Role: "app",
		App: "files", Subtask: "list <files> & more", Round: 2, Step: 3, Phase: "ACTION",
		Session: &Session{ID: "r", Format: Format, Task: "t", Config: "a: <b>\n"},
		Call:    &Call{N: 1, Request: llm.Request{Messages: []llm.Message{llm.User("hi")}}, LatencyMS: 1.5},
		Commands: []command.Command{
			{ToolName: "ls", Parameters: map[string]any{"path": "/tmp", "n": 2}, ToolType: command.Action, CallID: "c1", Namespace: "files"},
			{ToolName: "get_device_info", ToolType: command.DataCollection},
		},
		Results: []command.Result{
			{Status: command.Success, Result: json.RawMessage(`{ "out" : "a <b> & c\u2028",  "n": [1, 2] }`), Namespace: "files", CallID: "c1"},
			{Status: command.Failure, Error: "no such file"},
		},
		Decision: &Decision{Status: "CONTINUE", Actions: []Action{{Function: "ls", Arguments: map[string]any{"path": "/"}}}},
		Status:   "CONTINUE", From: "CONTINUE", To: "FINISH",
		Observations: []Observation{{Name: "screen", Content: "x"}}, Usage: &usage, Attempts: 2, DurationMS: 12.5,
		TimingsMS: map[string]float64{"ACTION": 1}, Errors: []string{"e"}, Error: "failed",
		Note: &Note{Subtask: "s", App: "files", Status: "FINISH", Result: "r"}, End: &End{Status: "FINISH"},
		Progress: &command.Progress{CallID: "c1", Progress: 0.5}}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the full event leaves %s unset: set it", et.Field(i).Name)
		}
	}
	events := []Event{full, {Type: TypeDispatch, Agent: "a", Commands: []command.Command{}, Results: []command.Result{}}}
	tr, err := Read("testdata/served-task")
	if err != nil {
		t.Fatal(err)
	}
	events = append(events, tr.Events...)
	for _, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(e.out())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s event:\n got %s\nwant %s", e.Type, got, want)
		}
	}

	// A payload that is not JSON fails both ways.
	bad := Event{Type: TypeDispatch, Agent: "a", Commands: []command.Command{{ToolName: "x"}}, Results: []command.Result{{Status: command.Success, Result: json.RawMessage(`{"a":`)}}}
	if _, err := json.Marshal(bad); err == nil {
		t.Fatal("json.Marshal took a payload that is not JSON")
	}
	if _, err := json.Marshal(bad.out()); err == nil {
		t.Error("the writer's form took a payload that is not JSON")
	}
}

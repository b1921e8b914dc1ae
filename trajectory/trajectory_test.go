package trajectory_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/trajectory"
)

var update = flag.Bool("update", false, "rewrite event.schema.json from the Go types")

const apiKey = "sk-live-0123456789abcdefghijkl"

// sample writes a small session with every event type, a secret in several
// places, a large tool result and a screenshot.
func sample(t *testing.T, dir string) []trajectory.Event {
	t.Helper()
	red, err := trajectory.NewRedactor([]string{apiKey, "hunter2-password"}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	w, err := trajectory.Create(dir, trajectory.Options{Redactor: red, ArtifactThreshold: 1024, Now: func() time.Time {
		clock = clock.Add(time.Millisecond)
		return clock
	}})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("line of a long listing\n", 200)
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1, 2, 3}, 600)...)
	req := llm.Request{Messages: []llm.Message{
		llm.System("You are an agent. Key: " + apiKey),
		{Role: llm.RoleUser, Content: "Look at this", Images: []llm.Image{{MIMEType: "image/png", Data: png}}},
		llm.User(big),
	}, Tools: []llm.Tool{{Name: "execute_command", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}}
	resp := &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Content: "thinking", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "execute_command", Arguments: `{"command":"echo hunter2-password"}`}}},
		Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}, Model: "gpt-test"}
	cmd := command.Command{ToolName: "execute_command", Namespace: "shell", ToolType: command.Action, Parameters: map[string]any{"command": "echo hunter2-password"}}
	res := command.Succeeded("id-1", map[string]any{"stdout": big, "exit_code": 0})
	events := []trajectory.Event{
		{Type: trajectory.TypeSessionStart, Session: &trajectory.Session{ID: "s1", Format: trajectory.Format, Task: "list things", Model: "openai:gpt-test",
			Config: "providers:\n  openai: {api_key: " + apiKey + "}\n", Apps: map[string]string{"shell": "run commands"}}},
		{Type: trajectory.TypeAgentStart, Agent: "app:shell#1", Role: "app", App: "shell", Subtask: "list"},
		{Type: trajectory.TypeModelCall, Agent: "app:shell#1", Step: 1, Phase: "LLM_INTERACTION", Call: &trajectory.Call{N: 1, Request: req, Response: resp, LatencyMS: 12.5}},
		{Type: trajectory.TypeModelCall, Agent: "app:shell#1", Step: 1, Call: &trajectory.Call{N: 2, Request: req, Error: &trajectory.CallError{Kind: "rate_limit", Message: "slow down"}}},
		{Type: trajectory.TypeDecision, Agent: "app:shell#1", Step: 1, Status: "CONTINUE", Decision: &trajectory.Decision{Status: "CONTINUE", Thought: "thinking",
			Actions: []trajectory.Action{{Function: "execute_command", Arguments: map[string]any{"command": "echo hunter2-password"}, CallID: "c1"}}}},
		{Type: trajectory.TypeDispatch, Agent: "app:shell#1", Step: 1, Phase: "ACTION_EXECUTION", Commands: []command.Command{cmd}, Results: []command.Result{res}, DurationMS: 3},
		{Type: trajectory.TypeStep, Agent: "app:shell#1", Step: 1, Status: "CONTINUE", Commands: []command.Command{cmd}, Results: []command.Result{res},
			Usage: &llm.Usage{PromptTokens: 10}, Attempts: 2, TimingsMS: map[string]float64{"LLM_INTERACTION": 12.5}},
		{Type: trajectory.TypeTransition, Agent: "app:shell#1", Step: 1, From: "CONTINUE", To: "FINISH"},
		{Type: trajectory.TypeAgentEnd, Agent: "app:shell#1", Role: "app", Note: &trajectory.Note{Status: "FINISH", Result: "done"}},
		{Type: trajectory.TypeSessionEnd, End: &trajectory.End{Status: "FINISH", Answer: "done", Steps: 1}},
	}
	for _, e := range events {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return events
}

func TestWriteReadRoundTrip(t *testing.T) {
	dir := t.TempDir()
	written := sample(t, dir)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != len(written) {
		t.Fatalf("read %d events, wrote %d", len(tr.Events), len(written))
	}
	for i, e := range tr.Events {
		if e.Seq != i+1 || e.Type != written[i].Type || e.Time.IsZero() {
			t.Errorf("event %d: seq %d type %s time %v", i+1, e.Seq, e.Type, e.Time)
		}
	}
	call := tr.Calls()[0]
	// The large message came back whole from its artifact, and the image
	// bytes too.
	if got := call.Request.Messages[2].Content; got != written[2].Call.Request.Messages[2].Content {
		t.Errorf("large message: %d bytes back, want %d", len(got), len(written[2].Call.Request.Messages[2].Content))
	}
	if !bytes.Equal(call.Request.Messages[1].Images[0].Data, written[2].Call.Request.Messages[1].Images[0].Data) {
		t.Error("image data did not round-trip")
	}
	var payload struct{ Stdout string }
	if err := json.Unmarshal(tr.Of(trajectory.TypeDispatch)[0].Results[0].Result, &payload); err != nil || len(payload.Stdout) != 200*23 {
		t.Errorf("large result: %v, %d bytes", err, len(payload.Stdout))
	}
	if tr.Session().Task != "list things" || tr.End().Answer != "done" || tr.Calls()[1].Error.Kind != "rate_limit" {
		t.Errorf("session %+v end %+v", tr.Session(), tr.End())
	}
}

func TestSecretsAreRedactedEverywhere(t *testing.T) {
	dir := t.TempDir()
	sample(t, dir)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, secret := range []string{apiKey, "hunter2-password"} {
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s contains the secret %q", p, secret)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Calls()[0].Request.Messages[0].Content; got != "You are an agent. Key: "+trajectory.Redacted {
		t.Errorf("system prompt = %q", got)
	}
	if got := tr.Calls()[0].Response.Message.ToolCalls[0].Arguments; !strings.Contains(got, trajectory.Redacted) {
		t.Errorf("tool call arguments not redacted: %s", got)
	}
}

func TestRedactorPatternsAndEscapes(t *testing.T) {
	r, err := trajectory.NewRedactor([]string{`pa"ss\word`}, trajectory.DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	line, _ := json.Marshal(map[string]string{"a": `x pa"ss\word y`, "b": "Authorization: Bearer abcdefghijklmnop1234", "c": "AKIAABCDEFGHIJKLMNOP"})
	out, err := r.JSON(line)
	if err != nil || !json.Valid(out) {
		t.Fatalf("%s %v", out, err)
	}
	var m map[string]string
	json.Unmarshal(out, &m)
	for k, want := range map[string]string{"a": "x [REDACTED] y", "b": "Authorization: [REDACTED]", "c": "[REDACTED]"} {
		if m[k] != want {
			t.Errorf("%s = %q, want %q", k, m[k], want)
		}
	}
	if _, err := trajectory.NewRedactor([]string{"abc"}, nil); err == nil {
		t.Error("a three-letter secret was accepted")
	}
}

func TestArtifactsAreContentAddressed(t *testing.T) {
	dir := t.TempDir()
	sample(t, dir)
	entries, err := os.ReadDir(filepath.Join(dir, trajectory.ArtifactsDir))
	if err != nil {
		t.Fatal(err)
	}
	var pngs, texts, jsons int
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".png":
			pngs++
		case ".txt":
			texts++
		case ".json":
			jsons++
		}
	}
	// The same request was sent twice and the same result appears in the
	// dispatch and in the step: each is stored once.
	if pngs != 1 || texts != 1 || jsons != 1 {
		t.Errorf("artifacts: %d png, %d txt, %d json: %v", pngs, texts, jsons, entries)
	}
	b, _ := os.ReadFile(filepath.Join(dir, trajectory.EventsFile))
	if !bytes.Contains(b, []byte(`"$artifact":"sha256:`)) {
		t.Error("no artifact reference in the lines")
	}
}

func TestReadRejectsDamage(t *testing.T) {
	for name, damage := range map[string]func(lines []string, dir string) []string{
		"gap in seq": func(l []string, _ string) []string { return append(l[:2], l[3:]...) },
		"missing field": func(l []string, _ string) []string {
			l[7] = strings.Replace(l[7], `"from":"CONTINUE",`, "", 1)
			return l
		},
		"unknown field": func(l []string, _ string) []string {
			l[1] = strings.Replace(l[1], `"type":"agent_start"`, `"type":"agent_start","colour":"red"`, 1)
			return l
		},
		"edited artifact": func(l []string, dir string) []string {
			entries, _ := os.ReadDir(filepath.Join(dir, trajectory.ArtifactsDir))
			for _, e := range entries {
				os.WriteFile(filepath.Join(dir, trajectory.ArtifactsDir, e.Name()), []byte("tampered"), 0o644)
			}
			return l
		},
		"no session start": func(l []string, _ string) []string { return l[1:] },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sample(t, dir)
			p := filepath.Join(dir, trajectory.EventsFile)
			b, _ := os.ReadFile(p)
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			os.WriteFile(p, []byte(strings.Join(damage(lines, dir), "\n")+"\n"), 0o644)
			if _, err := trajectory.Read(dir); err == nil {
				t.Error("damaged trajectory was read without error")
			} else {
				t.Log(err)
			}
		})
	}
}

// TestReadTornLastLine: a last line cut in the middle (a crash while it
// was written) is left out, counted, and said; the same damage anywhere
// else, or a torn line with a newline after it, is refused.
func TestReadTornLastLine(t *testing.T) {
	dir := t.TempDir()
	sample(t, dir)
	p := filepath.Join(dir, trajectory.EventsFile)
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	kept := strings.Join(lines[:6], "")
	os.WriteFile(p, []byte(kept+lines[6][:40]), 0o644)
	tr, err := trajectory.Read(dir)
	if err != nil {
		t.Fatalf("a torn last line: %v", err)
	}
	stops := tr.Stops()
	if len(tr.Events) != 6 || tr.Torn != 40 || tr.End() != nil ||
		!strings.Contains(stops, "stops after event 6 (dispatch of app:shell#1 step 1)") || !strings.Contains(stops, "torn after 40 bytes") {
		t.Errorf("read %d events, torn %d, stops %q", len(tr.Events), tr.Torn, stops)
	}
	if _, err := trajectory.Decode(strings.NewReader(kept+lines[6][:40]), dir); err == nil {
		t.Error("Decode took a torn line without a word")
	}
	os.WriteFile(p, []byte(kept+lines[6][:40]+"\n"), 0o644)
	if _, err := trajectory.Read(dir); err == nil {
		t.Error("a damaged line followed by a newline was read as torn")
	}
	// Cut after a whole line: no session_end, no torn line.
	os.WriteFile(p, []byte(kept), 0o644)
	if tr, err := trajectory.Read(dir); err != nil || tr.Torn != 0 || !strings.Contains(tr.Stops(), "stops after event 6") || strings.Contains(tr.Stops(), "torn") {
		t.Errorf("cut after a whole line: %v %q", err, tr.Stops())
	}
	os.WriteFile(p, b, 0o644)
	if tr, err := trajectory.Read(dir); err != nil || tr.Stops() != "" {
		t.Errorf("a whole recording: %v %q", err, tr.Stops())
	}
}

func TestCreateRefusesExistingTrajectory(t *testing.T) {
	dir := t.TempDir()
	sample(t, dir)
	if _, err := trajectory.Create(dir, trajectory.Options{}); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Errorf("err = %v", err)
	}
}

func TestSchemaIsUpToDate(t *testing.T) {
	got, err := trajectory.GenerateSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		os.WriteFile("event.schema.json", append(got, '\n'), 0o644)
	}
	if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(trajectory.Schema())) {
		t.Fatal("event.schema.json is stale: run go test ./trajectory -run TestSchemaIsUpToDate -update")
	}
}

// ValidateLines checks each line of a trajectory file against the schema.
func validateLines(t *testing.T, dir string) int {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(trajectory.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(trajectory.SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(trajectory.SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, trajectory.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for i, line := range lines {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("line %d does not match the schema: %v", i+1, err)
		}
	}
	return len(lines)
}

func TestLinesMatchSchema(t *testing.T) {
	dir := t.TempDir()
	sample(t, dir)
	if n := validateLines(t, dir); n != 10 {
		t.Errorf("%d lines", n)
	}
	// And the schema says what a type requires: a transition without from
	// and to is refused.
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(trajectory.Schema()))
	c := jsonschema.NewCompiler()
	c.AddResource(trajectory.SchemaID, doc)
	sch, _ := c.Compile(trajectory.SchemaID)
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"seq":1,"time":"2025-01-01T00:00:00Z","type":"transition","agent":"host"}`))
	if err := sch.Validate(bad); err == nil {
		t.Error("a transition without from/to passed the schema")
	}
}

func TestTextDiff(t *testing.T) {
	d := trajectory.TextDiff("a\nb\nc\nd", "a\nB\nc\nd\ne")
	for _, want := range []string{"- b", "+ B", "+ e", "  a"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
	if trajectory.TextDiff("same", "same") != "  same\n" && strings.ContainsAny(trajectory.TextDiff("same", "same"), "+-") {
		t.Error("equal texts produced changes")
	}
}

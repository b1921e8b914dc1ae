package prompts

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseReply(t *testing.T) {
	app := AppStatuses()
	tests := []struct {
		name    string
		raw     string
		allowed []string
		want    Reply
	}{
		{
			name:    "clean JSON",
			raw:     `{"observation":"empty dir","thought":"list it","actions":[{"function":"run_command","arguments":{"command":"ls -la"}}],"status":"CONTINUE","plan":["read the file"],"comment":"","result":""}`,
			allowed: app,
			want: Reply{Observation: "empty dir", Thought: "list it", Status: "CONTINUE", Plan: []string{"read the file"},
				Actions: []Action{{Function: "run_command", Arguments: map[string]any{"command": "ls -la"}}}},
		},
		{
			name:    "fenced JSON with prose around",
			raw:     "Sure, here it is:\n```json\n{\"thought\": \"done\", \"actions\": [], \"status\": \"FINISH\", \"result\": \"41G\"}\n```\nLet me know!",
			allowed: app,
			want:    Reply{Thought: "done", Status: "FINISH", Result: "41G", Actions: nil},
		},
		{
			name:    "fence inside a string value is kept",
			raw:     "```json\n{\"status\": \"FINISH\", \"result\": \"Run:\\n```sh\\nls\\n```\"}\n```",
			allowed: app,
			want:    Reply{Status: "FINISH", Result: "Run:\n```sh\nls\n```"},
		},
		{
			name:    "JSON in prose",
			raw:     `I will check the disk first. {"thought": "df shows it", "status": "CONTINUE", "actions": [{"function": "run_command", "arguments": {"command": "df -h /"}}]} That is my reply.`,
			allowed: app,
			want:    Reply{Thought: "df shows it", Status: "CONTINUE", Actions: []Action{{Function: "run_command", Arguments: map[string]any{"command": "df -h /"}}}},
		},
		{
			name:    "stray brace in prose before the JSON",
			raw:     `Use the {path} argument. {"status": "FINISH", "result": "ok"}`,
			allowed: app,
			want:    Reply{Status: "FINISH", Result: "ok"},
		},
		{
			name:    "think block before JSON",
			raw:     "<think>The user wants {\"status\": \"FAIL\"}? No, list first.</think>\n{\"status\": \"CONTINUE\", \"actions\": [{\"function\": \"ls\", \"arguments\": {}}]}",
			allowed: app,
			want:    Reply{Status: "CONTINUE", Actions: []Action{{Function: "ls", Arguments: map[string]any{}}}},
		},
		{
			name:    "closing think tag without its opening",
			raw:     "the model thought here { a brace }\n</think>\n{\"status\": \"FINISH\", \"result\": \"x\"}",
			allowed: app,
			want:    Reply{Status: "FINISH", Result: "x"},
		},
		{
			name:    "unclosed think tag with the JSON after the reasoning",
			raw:     "<think>I should finish now.\n{\"status\": \"FINISH\", \"result\": \"done\"}",
			allowed: app,
			want:    Reply{Status: "FINISH", Result: "done"},
		},
		{
			name:    "trailing commas",
			raw:     `{"status": "CONTINUE", "actions": [{"function": "ls", "arguments": {"path": "/tmp",},},],}`,
			allowed: app,
			want:    Reply{Status: "CONTINUE", Actions: []Action{{Function: "ls", Arguments: map[string]any{"path": "/tmp"}}}},
		},
		{
			name:    "repair keeps escaped Windows paths",
			raw:     `{"status": "CONTINUE", "actions": [{"function": "read_file", "arguments": {"path": "C:\\Users\\ana\\notes.txt"}},],}`,
			allowed: app,
			want:    Reply{Status: "CONTINUE", Actions: []Action{{Function: "read_file", Arguments: map[string]any{"path": `C:\Users\ana\notes.txt`}}}},
		},
		{
			name:    "single quotes",
			raw:     `{'status': 'FINISH', 'result': 'it is done', 'actions': []}`,
			allowed: app,
			want:    Reply{Status: "FINISH", Result: "it is done"},
		},
		{
			name:    "Python literals, unquoted keys and comments",
			raw:     "{status: 'CONTINUE', // next step\n actions: [{function: 'write_file', arguments: {path: '/tmp/a', append: True, mode: None, force: False}}]}",
			allowed: app,
			want: Reply{Status: "CONTINUE", Actions: []Action{{Function: "write_file",
				Arguments: map[string]any{"path": "/tmp/a", "append": true, "mode": nil, "force": false}}}},
		},
		{
			name:    "UFO capitalised keys and aliases",
			raw:     `{"Observation": "seen", "Thought": "go", "Status": " continue ", "Actions": [{"Function": "run_command", "Args": {"command": "pwd"}}, {"name": "which", "parameters": {"program": "git"}}], "Plan": "- check git\n- report", "Comment": "hi"}`,
			allowed: app,
			want: Reply{Observation: "seen", Thought: "go", Status: "CONTINUE", Comment: "hi", Plan: []string{"check git", "report"},
				Actions: []Action{
					{Function: "run_command", Arguments: map[string]any{"command": "pwd"}},
					{Function: "which", Arguments: map[string]any{"program": "git"}},
				}},
		},
		{
			name:    "arguments given as a JSON string",
			raw:     `{"status": "CONTINUE", "actions": [{"function": "run_command", "arguments": "{\"command\": \"echo hi\", \"timeout_seconds\": 5}"}]}`,
			allowed: app,
			want:    Reply{Status: "CONTINUE", Actions: []Action{{Function: "run_command", Arguments: map[string]any{"command": "echo hi", "timeout_seconds": float64(5)}}}},
		},
		{
			name:    "OpenAI tool-call shape in actions",
			raw:     `{"status": "CONTINUE", "actions": [{"type": "function", "function": {"name": "ls", "arguments": "{\"path\":\"/\"}"}}]}`,
			allowed: app,
			want:    Reply{Status: "CONTINUE", Actions: []Action{{Function: "ls", Arguments: map[string]any{"path": "/"}}}},
		},
		{
			name:    "single action at the top level",
			raw:     `{"thought": "list", "function": "ls", "args": {"path": "/"}, "status": "CONTINUE"}`,
			allowed: app,
			want:    Reply{Thought: "list", Status: "CONTINUE", Actions: []Action{{Function: "ls", Arguments: map[string]any{"path": "/"}}}},
		},
		{
			name:    "several actions keep their order",
			raw:     `{"status": "ASSIGN", "actions": [{"function": "assign_subtask", "arguments": {"app": "shell", "subtask": "one"}}, {"function": "assign_subtask", "arguments": {"app": "files", "subtask": "two"}}, {"function": "assign_subtask", "arguments": {"app": "shell", "subtask": "three"}}]}`,
			allowed: HostStatuses(),
			want: Reply{Status: "ASSIGN", Actions: []Action{
				{Function: "assign_subtask", Arguments: map[string]any{"app": "shell", "subtask": "one"}},
				{Function: "assign_subtask", Arguments: map[string]any{"app": "files", "subtask": "two"}},
				{Function: "assign_subtask", Arguments: map[string]any{"app": "shell", "subtask": "three"}},
			}},
		},
		{
			name:    "non-string result and plan items become compact JSON",
			raw:     `{"status": "FINISH", "result": {"free": "41G", "mount": "/"}, "plan": [1, "two", {"x": "<y>"}]}`,
			allowed: app,
			want:    Reply{Status: "FINISH", Result: `{"free":"41G","mount":"/"}`, Plan: []string{"1", "two", `{"x":"<y>"}`}},
		},
		{
			name:    "no allowed list accepts any status",
			raw:     `{"status": "screenshot"}`,
			allowed: nil,
			want:    Reply{Status: "SCREENSHOT"},
		},
		{
			name:    "last complete object with a status wins over a draft",
			raw:     `Draft: {"status": "CONTINUE", "actions": [{"function": "ls", "arguments": {}}]} Final: {"status": "FINISH", "result": "none needed"}`,
			allowed: app,
			want:    Reply{Status: "FINISH", Result: "none needed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReply(tt.raw, tt.allowed)
			if err != nil {
				t.Fatalf("ParseReply: %v", err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", *got, tt.want)
			}
		})
	}
}

func TestParseReplyErrors(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		allowed []string
		// every fragment must appear in the error text
		want []string
	}{
		{"empty reply", "  \n ", AppStatuses(), []string{"empty", "exactly one JSON object"}},
		{"garbage text", "I am not sure what to do next, sorry.", AppStatuses(), []string{"no JSON object", "exactly one JSON object"}},
		{"only unclosed thinking", "<think>Let me consider the disk. It might be", AppStatuses(), []string{"<think>", "no JSON object"}},
		{"status not allowed", `{"status": "DONE", "result": "x"}`, AppStatuses(),
			[]string{`"DONE" is not allowed`, "CONTINUE, FINISH, FAIL, CONFIRM, PENDING"}},
		{"host status in an app reply", `{"status": "ASSIGN", "actions": []}`, AppStatuses(), []string{`"ASSIGN" is not allowed`}},
		{"no status", `{"thought": "hmm", "actions": []}`, HostStatuses(), []string{`no "status"`, "ASSIGN, FINISH, FAIL"}},
		{"status not a string", `{"status": 3}`, nil, []string{`"status" must be a string`}},
		{"action without function", `{"status": "CONTINUE", "actions": [{"arguments": {"a": 1}}]}`, AppStatuses(), []string{`actions[0] has no "function"`}},
		{"action not an object", `{"status": "CONTINUE", "actions": ["ls -la"]}`, AppStatuses(), []string{"actions[0] is a string"}},
		{"arguments a number", `{"status": "CONTINUE", "actions": [{"function": "ls", "arguments": 7}]}`, AppStatuses(), []string{"actions[0] (ls)", "must be an object"}},
		{"arguments a string that is not an object", `{"status": "CONTINUE", "actions": [{"function": "ls", "arguments": "[1,2]"}]}`, AppStatuses(), []string{"actions[0] (ls)", "must be a JSON object"}},
		{"truncated inside the actions", `{"thought": "x", "status": "CONTINUE", "actions": [{"function": "run_command", "arguments": {"command": "rm -rf /tmp/bu`, AppStatuses(), []string{`cut off inside "actions"`, "none of it was run", "shorter"}},
		{"truncated inside the status", `{"thought": "x", "actions": [], "status": "FIN`, AppStatuses(), []string{`cut off inside "status"`}},
		{"truncated before the status", `{"thought": "I think the answer is`, AppStatuses(), []string{`cut off inside "thought"`}},
		// Cut where the old parser completed the reply: the result, or
		// between members. Completing it would be a guess.
		{"truncated inside the result", `{"thought": "all verified", "actions": [], "status": "FINISH", "result": "The largest file is /var/log/sys`, AppStatuses(), []string{`cut off inside "result"`}},
		{"truncated after the last complete member", "```json\n{\"status\": \"FINISH\", \"result\": \"41G\", \"plan\": [\"tell the user\"\n```", AppStatuses(), []string{"cut off inside \"plan\""}},
		{"truncated between members", `{"status": "CONTINUE", "actions": [{"function": "run_command", "arguments": {"command": "rm -rf keep"}}],`, AppStatuses(), []string{"cut off before it was complete"}},
		{"a draft before a cut final version", `Draft: {"status": "CONTINUE", "actions": [{"function": "ls", "arguments": {}}]} Final: {"status": "FINISH", "result": "no`, AppStatuses(), []string{`cut off inside "result"`}},
		{"a string cut in arguments given as text", `{"status": "CONTINUE", "actions": [{"function": "run_command", "arguments": "{\"command\": \"rm -rf keep"}]}`, AppStatuses(), []string{"not complete"}},
		{"an unclosed comment", `{"status": "FINISH", /* and the result`, AppStatuses(), []string{"cut off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseReply(tt.raw, tt.allowed)
			if err == nil {
				t.Fatalf("ParseReply accepted %q as %#v", tt.raw, got)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError: %v", err, err)
			}
			if pe.Raw != tt.raw {
				t.Errorf("Raw = %q, want the reply %q", pe.Raw, tt.raw)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err.Error(), w)
				}
			}
		})
	}
}

func TestParseArguments(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]any
		wantErr bool
	}{
		{``, map[string]any{}, false},
		{`null`, map[string]any{}, false},
		{`{"path": "/tmp"}`, map[string]any{"path": "/tmp"}, false},
		{`{"path": "/tmp",}`, map[string]any{"path": "/tmp"}, false},
		{`{'path': '/tmp', 'recursive': True}`, map[string]any{"path": "/tmp", "recursive": true}, false},
		{`"{\"path\": \"/tmp\"}"`, map[string]any{"path": "/tmp"}, false},
		{`[1, 2]`, nil, true},
		{`42`, nil, true},
	}
	for _, tt := range tests {
		got, err := ParseArguments(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseArguments(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseArguments(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestRepairJSON(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"trailing comma keeps escaped Windows path", `{"path": "C:\\Users\\ana\\a.txt",}`, `{"path": "C:\\Users\\ana\\a.txt"}`},
		{"raw newline and tab inside a string", "{\"text\": \"a\nb\tc\"}", `{"text": "a\nb\tc"}`},
		{"comments outside strings only", "{\"url\": \"http://x/*y*/\", // note\n \"n\": 1 /* c */}", "{\"url\": \"http://x/*y*/\", \n \"n\": 1 }"},
		{"Python literals outside strings only", `{"a": True, "b": None, "c": "True"}`, `{"a": true, "b": null, "c": "True"}`},
		{"single quotes, read as Python reads them", `{'a': 'say "hi"', 'b': 'it\'s'}`, `{"a": "say \"hi\"", "b": "it's"}`},
		{"unquoted keys", `{path: "/tmp", _x1: 2, "y": {z: null}}`, `{"path": "/tmp", "_x1": 2, "y": {"z": null}}`},
		{"a fence around it", "```json\n{\"a\": 1,}\n```", `{"a": 1}`},
		{"a fence never closed", "```json\n{\"a\": 1}", `{"a": 1}`},
	}
	for _, tt := range tests {
		got, err := RepairJSON(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("%s: RepairJSON(%q) = %q, %v; want %q", tt.name, tt.in, got, err, tt.want)
		}
	}
}

// TestRepairJSONRefusesCutText: text that ends before its strings,
// comments or brackets close is never completed, since the closing would
// be a guess at what it said; other faults are refused as not JSON.
func TestRepairJSONRefusesCutText(t *testing.T) {
	for _, in := range []string{
		`{"command": "rm -rf keep`,
		`{"command": "rm -rf keep"`,
		`{"command": "rm -rf keep",`,
		`{"a": [1, 2], "b":`,
		`{"a": [{"b": 1},`,
		`{"path": "C:\\Users\\an`,
		`{"a": "x\`,
		`{'a': 'b`,
		`{"a": 1} /* and`,
		"```json\n{\"a\": [1,",
		`[`,
	} {
		got, err := RepairJSON(in)
		if !errors.Is(err, ErrIncomplete) {
			t.Errorf("RepairJSON(%q) = %q, %v; want an error matching ErrIncomplete", in, got, err)
		}
		if _, err := ParseArguments(in); !errors.Is(err, ErrIncomplete) {
			t.Errorf("ParseArguments(%q): %v; want an error matching ErrIncomplete", in, err)
		}
	}
	for _, in := range []string{
		`{"command": "echo "hi""}`, // which quotes end the string?
		`{status: CONTINUE}`,       // a bare word as a value
		`{"a": 1 "b": 2}`,          // a missing comma
		`{“command”: “ls”}`,        // typographic quotes
		`{"a": [1, 2}`,             // brackets that do not match
		`{"n": NaN}`,
	} {
		got, err := RepairJSON(in)
		if err == nil || errors.Is(err, ErrIncomplete) {
			t.Errorf("RepairJSON(%q) = %q, %v; want an error that it is not JSON", in, got, err)
		}
	}
	// An apostrophe ends a Python string, so what follows reads as cut
	// off: refused either way.
	if got, err := RepairJSON(`{'cmd': 'echo it's done'}`); err == nil {
		t.Errorf("RepairJSON accepted a Python string with an apostrophe in it as %q", got)
	}
}

func TestRepairJSONLeavesValidJSONAlone(t *testing.T) {
	// A Windows path with escaped backslashes is valid JSON; the repairer's
	// path heuristics must not get a chance to touch it.
	in := `{"path": "C:\\Users\\ana\\new.txt", "tab": "\t"}`
	got, err := RepairJSON(in)
	if err != nil || got != in {
		t.Fatalf("RepairJSON(%q) = %q, %v; want it unchanged", in, got, err)
	}
	if _, err := RepairJSON("   "); err == nil {
		t.Error("RepairJSON of blank text succeeded")
	}
}

func TestReplySchema(t *testing.T) {
	var all map[string]any
	if err := json.Unmarshal(ReplySchema(), &all); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"$ref", "$defs", "$schema", "$id"} {
		if _, ok := all[k]; ok {
			t.Errorf("schema has top-level %s", k)
		}
	}
	props := all["properties"].(map[string]any)
	for _, f := range []string{"observation", "thought", "actions", "status", "plan", "comment", "result"} {
		if _, ok := props[f]; !ok {
			t.Errorf("schema lacks property %q", f)
		}
	}
	if _, ok := props["Truncated"]; ok {
		t.Error("schema exposes the Truncated field")
	}
	enum := props["status"].(map[string]any)["enum"].([]any)
	if len(enum) != 7 {
		t.Errorf("status enum = %v, want all 7 statuses", enum)
	}

	var host map[string]any
	if err := json.Unmarshal(ReplySchemaFor(HostStatuses()), &host); err != nil {
		t.Fatal(err)
	}
	got := host["properties"].(map[string]any)["status"].(map[string]any)["enum"]
	if !reflect.DeepEqual(got, []any{"ASSIGN", "FINISH", "FAIL", "PENDING"}) {
		t.Errorf("host status enum = %v", got)
	}
}

func TestActionDecode(t *testing.T) {
	a := Action{Function: AssignTool, Arguments: map[string]any{"app": "shell", "subtask": "run df"}}
	var args AssignArgs
	if err := a.Decode(&args); err != nil {
		t.Fatal(err)
	}
	if args != (AssignArgs{App: "shell", Subtask: "run df"}) {
		t.Errorf("Decode = %+v", args)
	}
	bad := Action{Function: AssignTool, Arguments: map[string]any{"app": 3}}
	if err := bad.Decode(&args); err == nil {
		t.Error("Decode accepted a number for app")
	}
}

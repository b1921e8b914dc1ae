package prompts

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestControlTools(t *testing.T) {
	tests := []struct {
		name     string
		tools    []ControlTool
		want     []string
		required map[string][]any
	}{
		{"host", HostControlTools(), []string{AssignTool, FinishTool, FailTool, AskUserTool},
			map[string][]any{AssignTool: {"app", "subtask"}, FinishTool: {"result"}, FailTool: {"reason"}, AskUserTool: {"question"}}},
		{"app", AppControlTools(), []string{FinishTool, FailTool, AskUserTool, ApprovalTool, ReadArtifactTool},
			map[string][]any{FinishTool: {"result"}, FailTool: {"reason"}, AskUserTool: {"question"}, ApprovalTool: {"reason"}, ReadArtifactTool: {"handle"}}},
		{"background", BackgroundTools(), []string{"command_status", "cancel_command"},
			map[string][]any{"command_status": {"call_id"}, "cancel_command": {"call_id"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for _, ct := range tt.tools {
				names = append(names, ct.Name)
				if ct.Description == "" {
					t.Errorf("%s has no description", ct.Name)
				}
				var schema map[string]any
				if err := json.Unmarshal(ct.Parameters, &schema); err != nil {
					t.Fatalf("%s: %v", ct.Name, err)
				}
				for _, k := range []string{"$ref", "$defs", "$schema", "$id"} {
					if _, ok := schema[k]; ok {
						t.Errorf("%s schema has top-level %s: %s", ct.Name, k, ct.Parameters)
					}
				}
				if schema["type"] != "object" || schema["additionalProperties"] != false {
					t.Errorf("%s schema is not a closed object: %s", ct.Name, ct.Parameters)
				}
				// Canonical, as recordings keep them: a replay compares
				// the offered tools byte for byte.
				if c := CanonicalJSON(ct.Parameters); string(c) != string(ct.Parameters) {
					t.Errorf("%s schema is not written canonically:\n%s\nwant\n%s", ct.Name, ct.Parameters, c)
				}
				if got := schema["required"]; !reflect.DeepEqual(got, tt.required[ct.Name]) {
					t.Errorf("%s required = %v, want %v", ct.Name, got, tt.required[ct.Name])
				}
			}
			if !reflect.DeepEqual(names, tt.want) {
				t.Errorf("names = %v, want %v", names, tt.want)
			}
		})
	}
}

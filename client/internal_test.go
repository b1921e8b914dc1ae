package client

import (
	"context"
	"slices"
	"testing"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/shell"
)

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"read_file", "red_file", 1},
		{"kitten", "sitting", 3}, {"list_dir", "list_dirs", 1}, {"same", "same", 0},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestClosest(t *testing.T) {
	var tools []command.ToolInfo
	for _, n := range []string{"read_file", "write_file", "list_dir", "search_files", "execute_command", "screenshot"} {
		tools = append(tools, command.ToolInfo{Name: n})
	}
	names := func(infos []command.ToolInfo) []string {
		var out []string
		for _, t := range infos {
			out = append(out, t.Name)
		}
		return out
	}
	tests := []struct {
		name string
		want []string
	}{
		{"red_file", []string{"read_file"}},
		{"Read_File", []string{"read_file"}},
		{"execute", []string{"execute_command"}},
		{"file", []string{"read_file", "write_file", "search_files"}}, // contained in them; nearest first
		{"shell_exec", nil},
		{"list_dirs", []string{"list_dir"}},
	}
	for _, tt := range tests {
		if got := names(closest(tt.name, tools, 3)); !slices.Equal(got, tt.want) {
			t.Errorf("closest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := closest("rite_file", tools, 1); len(got) != 1 {
		t.Errorf("limit 1 gave %d", len(got))
	}
}

func TestPinnedProtocolVersion(t *testing.T) {
	c, err := New(context.Background(), []Server{{Namespace: "shell", MCP: shell.New(shell.Options{})}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.conns[0].cur.mc.ProtocolVersion(); got != "2025-11-25" {
		t.Errorf("negotiated protocol %q, want 2025-11-25", got)
	}
}

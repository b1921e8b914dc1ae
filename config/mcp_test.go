package config

import (
	"strings"
	"testing"
)

func TestMCPDefaultsAndPresets(t *testing.T) {
	m := Default().MCP
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Use, ",") != "shell,files" {
		t.Errorf("use: %v", m.Use)
	}
	for _, name := range []string{"filesystem", "everything", "memory", "playwright"} {
		if s := m.Servers[name]; s.Kind != "stdio" || s.Command != "npx" {
			t.Errorf("preset %s: %+v", name, s)
		}
	}
	pw := strings.Join(m.Servers["playwright"].Args, " ")
	for _, flag := range []string{"--headless", "--no-sandbox", "--isolated", "--executable-path /usr/bin/chromium"} {
		if !strings.Contains(pw, flag) {
			t.Errorf("playwright preset lacks %s", flag)
		}
	}
}

func TestMCPValidate(t *testing.T) {
	tests := []struct {
		yaml string
		want string
	}{
		{"mcp: {use: [nope]}", `mcp.use: no server "nope"`},
		{"mcp: {servers: {x: {kind: stdio}}}", "mcp.servers.x: kind stdio needs a command"},
		{"mcp: {servers: {x: {kind: http, url: ftp://a}}}", "needs an http:// or https:// url"},
		{"mcp: {servers: {x: {kind: pipe}}}", `kind "pipe" must be stdio, http, builtin or desktop`},
		{"mcp: {servers: {x: {kind: builtin}}}", "kind builtin is only for shell, files and desktop"},
		{"mcp: {servers: {x: {kind: stdio, command: a, deny: ['[']}}}", `tool pattern "[" is malformed`},
		{"mcp: {servers: {x: {kind: stdio, command: a, risk: {'*': scary}}}}", `mcp.servers.x.risk.*: "scary"`},
		{"mcp: {servers: {'9x': {kind: stdio, command: a}}}", "must start with a letter"},
		{"mcp: {policy: {forbid: [loud]}}", `mcp.policy.forbid: "loud"`},
		{"mcp: {apps: {web: [ghost]}}", `mcp.apps.web: no server "ghost"`},
	}
	for _, tt := range tests {
		c, err := parse(Default(), []byte(tt.yaml), "test")
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if err := c.MCP.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want %q", tt.yaml, err, tt.want)
		}
	}
	c, _ := parse(Default(), []byte("mcp: {apps: {web: [shell, playwright]}}"), "test")
	if set, err := c.MCP.Selected("web"); err != nil || strings.Join(set, ",") != "shell,playwright" {
		t.Errorf("app set: %v %v", set, err)
	}
	if _, err := c.MCP.Selected("mail"); err == nil || !strings.Contains(err.Error(), `no app "mail"; known apps: web`) {
		t.Errorf("unknown app: %v", err)
	}
}

package server_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/server"
)

// TestDeviceToolsAskedAndFollowed: a Saucer device client is asked for
// its tools when it registers, outside any task, and the API lists them
// with their annotations and streams; when one of its MCP servers
// announces a new tool list, the device says so at once (its heartbeats
// are a minute apart) and the server asks again; after a reconnection
// it is asked again.
func TestDeviceToolsAskedAndFollowed(t *testing.T) {
	f := newFixture(t, server.Options{})
	all := f.openEvents(t, "/api/events", "")
	all.next() // the snapshot

	web := mcpserver.NewMCPServer("web", "1", mcpserver.WithToolCapabilities(true))
	noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	web.AddTool(mcp.NewTool("lookup", mcp.WithDescription("looks a word up"), mcp.WithReadOnlyHintAnnotation(true)), noop)
	web.AddTool(mcp.NewTool("wipe", mcp.WithDescription("wipes the cache"), mcp.WithReadOnlyHintAnnotation(false),
		mcp.WithDestructiveHintAnnotation(true)), noop)
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(web))
	dev, err := client.New(context.Background(), []client.Server{
		{Namespace: "shell", Description: "Run shell commands.", MCP: shell.New(shell.Options{Dir: t.TempDir()})},
		{Namespace: "web", Description: "The web.", URL: hs.URL + "/mcp"},
	}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close(); hs.Close() })
	want := len(dev.Tools("", ""))

	// toolsEvent waits for the device's entry to count n tools.
	toolsEvent := func(n int) server.ClientInfo {
		t.Helper()
		var ci server.ClientInfo
		all.until(func(e server.Event) bool {
			if e.Type != server.EventClient {
				return false
			}
			ci = decode[server.ClientInfo](t, e)
			return ci.ClientID == "box" && ci.Tools.Count == n
		})
		return ci
	}
	rc := connect(t, f.wsURL, "box", dev, func(o *remote.Options) { o.HeartbeatInterval = time.Minute })
	if ci := toolsEvent(want); ci.Tools.Source != server.ToolsFromDevice || ci.Tools.LearnedAt.IsZero() {
		t.Fatalf("the device's entry: %+v", ci.Tools)
	}
	var dt server.DeviceTools
	if code := f.api(t, "GET", "/api/clients/box/tools", nil, &dt); code != 200 || dt.Source != server.ToolsFromDevice || len(dt.Tools) != want {
		t.Fatalf("GET tools: %d %+v", code, dt)
	}
	find := func(dt server.DeviceTools, ns, name string) server.DeviceTool {
		t.Helper()
		i := slices.IndexFunc(dt.Tools, func(x server.DeviceTool) bool { return x.Namespace == ns && x.Name == name })
		if i < 0 {
			t.Fatalf("no %s.%s in %+v", ns, name, dt.Tools)
		}
		return dt.Tools[i]
	}
	if lk := find(dt, "web", "lookup"); lk.Description != "looks a word up" || lk.Annotations.ReadOnly == nil || !*lk.Annotations.ReadOnly || lk.Risk != "read" {
		t.Errorf("lookup: %+v", lk)
	}
	if wp := find(dt, "web", "wipe"); wp.Annotations.Destructive == nil || !*wp.Annotations.Destructive || wp.Risk != "destructive" {
		t.Errorf("wipe: %+v", wp)
	}
	if ex := find(dt, "shell", "execute_command"); !slices.Contains(ex.Streams, "output") {
		t.Errorf("execute_command streams %v", ex.Streams)
	}

	// A tool appears on the web server: the device tells the server at
	// once, and the server asks again.
	web.AddTool(mcp.NewTool("added", mcp.WithDescription("appeared later")), noop)
	toolsEvent(want + 1)
	f.api(t, "GET", "/api/clients/box/tools", nil, &dt)
	if a := find(dt, "web", "added"); a.Description != "appeared later" {
		t.Errorf("added: %+v", a)
	}

	// Reconnected, it is asked again.
	asked := dt.LearnedAt
	f.srv.DropConnection("box")
	<-rc.Connected()
	var ci server.ClientInfo
	all.until(func(e server.Event) bool {
		if e.Type == server.EventClient {
			ci = decode[server.ClientInfo](t, e)
		}
		return ci.Status == "connected" && ci.Tools.LearnedAt.After(asked)
	})

	if code := f.api(t, "GET", "/api/clients/nobody/tools", nil, &map[string]any{}); code != 404 {
		t.Errorf("an unknown device's tools: %d", code)
	}
}

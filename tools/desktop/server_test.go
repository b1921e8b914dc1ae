package desktop_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/desktoptest"
	"github.com/saucerhq/saucer/tools/desktop"
)

// TestServerThroughDeviceClient drives galculator through the MCP server
// as a device client does: real MCP calls, the screenshot as an image
// content, effects as JSON, risk classes from the annotations.
func TestServerThroughDeviceClient(t *testing.T) {
	desktoptest.Require(t, "galculator")
	s := desktoptest.Start(t)
	d := desktop.New(desktop.Options{Display: s.Display, Bus: s.BusAddr, Env: s.Env})
	t.Cleanup(func() { d.Close() })
	ctx := context.Background()
	c, err := client.New(ctx, []client.Server{{Namespace: "desktop", MCP: desktop.NewServer(d)}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	risks := map[string]client.Risk{}
	for _, info := range c.Tools("desktop", "") {
		risks[info.Name] = client.RiskOf(info)
	}
	for tool, want := range map[string]client.Risk{"observe": "read", "click": "write", "type_text": "write",
		"type_in_terminal": "destructive", "close_window": "destructive", "launch_app": "destructive", "wait_for": "read",
		"screenshot": "read", "click_at": "write", "move_to": "write", "drag": "write", "scroll_at": "write",
		"resize_window": "write", "move_window": "write", "maximize_window": "write"} {
		if risks[tool] != want {
			t.Errorf("%s has risk %q, want %q", tool, risks[tool], want)
		}
	}
	run := func(tool string, args map[string]any) command.Result {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return c.Execute(cctx, command.Command{ToolName: tool, Namespace: "desktop", Parameters: args, CallID: tool})
	}
	// No window: an empty list, not null.
	if r := run("list_windows", map[string]any{}); r.Status != command.Success || strings.TrimSpace(string(r.Result)) != "[]" {
		t.Fatalf("list_windows with no window open: %+v", r)
	}
	if r := run("launch_app", map[string]any{"command": []string{"galculator"}}); r.Status != command.Success || !strings.Contains(string(r.Result), `"new_windows"`) {
		t.Fatalf("launch: %+v", r)
	}
	r := run("observe", map[string]any{})
	var entries []struct {
		Type, Text, Data string
		MIME             string `json:"mime_type"`
	}
	if err := json.Unmarshal(r.Result, &entries); err != nil || len(entries) != 2 {
		t.Fatalf("observe gave %s (%v)", r.Result, err)
	}
	if !strings.Contains(entries[0].Text, `toggle button "7"`) || entries[1].Type != "image" || entries[1].MIME != "image/png" {
		t.Fatalf("observe: %s / %s %s", entries[0].Text, entries[1].Type, entries[1].MIME)
	}
	if png, err := base64.StdEncoding.DecodeString(entries[1].Data); err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		t.Fatalf("the image is not a PNG (%v)", err)
	}
	// wait_for returns the controls it waited for, with their ids; what
	// never comes fails with what is there.
	r = run("wait_for", map[string]any{"role": "toggle button", "name": "7"})
	if r.Status != command.Success || !strings.Contains(string(r.Result), `toggle button \"7\"`) {
		t.Fatalf("wait_for the 7 key: %+v", r)
	}
	r = run("wait_for", map[string]any{"role": "link", "timeout": 0.3})
	if r.Status != command.Failure || !strings.Contains(r.Error, "not found in 0.3 s: no control with role \"link\"") || !strings.Contains(r.Error, `toggle button "7"`) {
		t.Fatalf("wait_for a link galculator never has: %+v", r)
	}
	// The 7 key hit by its pixel centre alone, in a half-size screenshot
	// that says its size and scale.
	r = run("screenshot", map[string]any{"scale": 0.5})
	if err := json.Unmarshal(r.Result, &entries); err != nil || len(entries) != 2 || entries[1].Type != "image" {
		t.Fatalf("screenshot gave %s (%v)", r.Result, err)
	}
	obs, err := d.Observe(ctx, "", desktop.ObserveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seven, ok := obs.Find("toggle button", "7")
	if !ok {
		t.Fatalf("no 7 key:\n%s", obs.Text())
	}
	w := obs.Window
	if want := fmt.Sprintf("Screenshot of window %s: %dx%d pixels at scale 0.5", w.ID, (w.Bounds.W+1)/2, (w.Bounds.H+1)/2); !strings.Contains(entries[0].Text, want) {
		t.Fatalf("the screenshot says %q, want it to say %q", entries[0].Text, want)
	}
	x, y := (seven.Bounds.X-w.Bounds.X+seven.Bounds.W/2)/2, (seven.Bounds.Y-w.Bounds.Y+seven.Bounds.H/2)/2
	if r := run("click_at", map[string]any{"window": w.ID, "x": x, "y": y}); r.Status != command.Success || !strings.Contains(string(r.Result), "scale 0.5") {
		t.Fatalf("click_at the 7 key's centre in the half-size screenshot: %+v", r)
	}
	r = run("wait_for", map[string]any{"role": "text", "name": "7", "timeout": 10})
	if r.Status != command.Success {
		t.Fatalf("the display does not show the 7 clicked at its pixels: %+v", r)
	}
	r = run("click_at", map[string]any{"window": w.ID, "x": 5000, "y": 1})
	if r.Status != command.Failure || !strings.Contains(r.Error, "is outside window "+w.ID+"'s screenshot") {
		t.Fatalf("click_at outside the screenshot: %+v", r)
	}
	// An id the server never handed out is a failure Result the model reads.
	r = run("click", map[string]any{"id": 4242})
	if r.Status != command.Failure || !strings.Contains(r.Error, "no control 4242 has been observed") {
		t.Fatalf("unknown id: %+v", r)
	}
	r = run("press_keys", map[string]any{"keys": []string{"ctrl+nope"}})
	if r.Status != command.Failure || !strings.Contains(r.Error, `unknown key "nope"`) {
		t.Fatalf("bad chord: %+v", r)
	}
}

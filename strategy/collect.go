package strategy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/memo"
	"github.com/saucerhq/saucer/prompts"
)

// discoverStrategy asks the device what it offers: the host agent learns the
// device and its apps (tool namespaces), an app agent its app's tools. It
// asks through the dispatcher, so it works the same for a remote device, and
// only once per agent: the answers are kept in the context.
type discoverStrategy struct{}

func (discoverStrategy) Name() string { return Discover }
func (discoverStrategy) Phase() Phase { return DataCollection }

func (discoverStrategy) Execute(ctx context.Context, pc *Context) error {
	if pc.tools != nil {
		return nil
	}
	params := map[string]any{}
	if pc.agent.Role == fsm.App {
		params["namespace"] = pc.agent.App
	}
	cmds := make([]command.Command, 1, 2)
	cmds[0] = command.Command{ToolName: command.GetMCPTools, ToolType: command.DataCollection, Parameters: params}
	asksDevice := pc.agent.Role == fsm.Host || pc.alone
	if asksDevice {
		cmds = append(cmds, command.Command{ToolName: command.GetDeviceInfo, ToolType: command.DataCollection})
	}
	results := pc.dispatcher.Execute(ctx, cmds)
	if len(results) != len(cmds) {
		return fmt.Errorf("discover: the dispatcher returned %d results for %d commands", len(results), len(cmds))
	}
	var tools []command.ToolInfo
	if results[0].OK() {
		var err error
		if tools, err = toolLists.Get(results[0].Result, decodeTools); err != nil {
			return fmt.Errorf("discover: the device's tool list is not a list of tool infos: %w", err)
		}
	} else {
		// UFO's device client has no get_mcp_tools, only list_tools by
		// tool type; its device information came with its registration.
		var err error
		if tools, err = listTools(ctx, pc, results[0].Error); err != nil {
			return err
		}
	}
	var device command.DeviceInfo
	if asksDevice && results[1].OK() {
		var err error
		if device, err = learnDevice(pc.device, results[1].Result); err != nil {
			return fmt.Errorf("discover: device info: %w", err)
		}
	}
	pc.learn(device, tools)
	if pc.agent.Role == fsm.App && len(tools) == 0 {
		return fmt.Errorf("discover: the device has no app %q (no tools in that namespace)", pc.agent.App)
	}
	return nil
}

// toolLists are the tool lists discovery decoded: every agent of every
// session on the same device (every case of a replayed suite) gets the
// same list, decoded once. The agents keep the list itself: no one changes it.
var toolLists memo.Bytes[[]command.ToolInfo]

func decodeTools(b []byte) ([]command.ToolInfo, error) {
	var tools []command.ToolInfo
	err := json.Unmarshal(b, &tools)
	return tools, err
}

// deviceInfos are the device answers discovery decoded: every session on
// the same device (every case of a replayed suite) gets the same answer.
var deviceInfos memo.Bytes[command.DeviceInfo]

// learnDevice is what was known of the device up front with the device's
// answer on top.
func learnDevice(known command.DeviceInfo, answer []byte) (command.DeviceInfo, error) {
	if reflect.ValueOf(known).IsZero() {
		d, err := deviceInfos.Get(answer, func(b []byte) (d command.DeviceInfo, err error) {
			return d, json.Unmarshal(b, &d)
		})
		// Each its own list and map: the decoded ones are shared.
		d.Features, d.Custom = slices.Clone(d.Features), maps.Clone(d.Custom)
		return d, err
	}
	// Decoding reuses a slice's array and a map: the known info's are
	// shared with whoever gave it (the server's device registry), so the
	// answer goes into copies of its own.
	known.Features, known.Custom = slices.Clone(known.Features), maps.Clone(known.Custom)
	err := json.Unmarshal(answer, &known)
	return known, err
}

// offerBackgroundTools adds command_status and cancel_command to an app
// agent's tools once one of its commands was left running in the
// background (until then they would only lengthen every request), unless
// it has them, or the app has tools of those names (they would hide the
// device's own).
func offerBackgroundTools(pc *Context) {
	if pc.agent.Role != fsm.App || !slices.ContainsFunc(pc.results, command.Result.Running) {
		return
	}
	for _, t := range pc.tools {
		if command.IsBackgroundControl(t.Name) {
			return
		}
	}
	app := pc.agent.App
	out := slices.Clone(pc.tools)
	for _, ct := range prompts.BackgroundTools() {
		tt, risk := command.DataCollection, "read"
		if ct.Name == command.CancelCommand {
			tt, risk = command.Action, "write"
		}
		out = append(out, command.ToolInfo{Name: ct.Name, Namespace: app, ToolType: tt, Description: ct.Description,
			InputSchema: ct.Parameters, Meta: map[string]any{"saucer/risk": risk}})
	}
	pc.tools, pc.native = out, nil
}

// listTools discovers the way a UFO device client answers: list_tools,
// once per tool type, each in a round of its own (a UFO client skips the
// rest of a round after a failure). An app agent keeps its own namespace.
func listTools(ctx context.Context, pc *Context, why string) ([]command.ToolInfo, error) {
	tools := []command.ToolInfo{}
	for _, tt := range []command.ToolType{command.Action, command.DataCollection} {
		r := pc.dispatcher.Execute(ctx, []command.Command{{ToolName: command.ListTools, ToolType: command.DataCollection,
			Parameters: map[string]any{"tool_type": string(tt)}}})
		if len(r) != 1 || !r[0].OK() {
			if tt == command.Action {
				msg := why
				if len(r) == 1 {
					msg += "; list_tools: " + r[0].Error
				}
				return nil, fmt.Errorf("discover: the device could not list its tools (get_mcp_tools: %s)", msg)
			}
			continue // a device with no such tool type
		}
		var some []command.ToolInfo
		if err := json.Unmarshal(r[0].Result, &some); err != nil {
			return nil, fmt.Errorf("discover: the device's list_tools answer is not a list of tool infos: %w", err)
		}
		for _, t := range some {
			if pc.agent.Role == fsm.App && t.Namespace != pc.agent.App {
				continue
			}
			tools = append(tools, t)
		}
	}
	return tools, nil
}

// groupApps groups tools by namespace, keeping descriptions the agent was
// configured with.
func groupApps(tools []command.ToolInfo, known []prompts.App) []prompts.App {
	desc := map[string]string{}
	for _, a := range known {
		desc[a.Name] = a.Description
	}
	byName := map[string]*prompts.App{}
	var names []string
	for _, t := range tools {
		a, ok := byName[t.Namespace]
		if !ok {
			a = &prompts.App{Name: t.Namespace, Description: desc[t.Namespace]}
			byName[t.Namespace] = a
			names = append(names, t.Namespace)
		}
		a.Tools = append(a.Tools, t)
	}
	sort.Strings(names)
	apps := make([]prompts.App, 0, len(names))
	for _, n := range names {
		apps = append(apps, *byName[n])
	}
	return apps
}

// observeStrategy runs configured data-collection commands each step, in
// parallel, and hands their results to the prompt as observations.
//
//   - name: observe
//     params:
//     commands:
//   - tool: list_dir
//     arguments: {path: "."}
type observeStrategy struct {
	cmds []command.Command
}

func newObserve(params map[string]any) (Strategy, error) {
	raw, err := json.Marshal(params["commands"])
	if err != nil {
		return nil, err
	}
	var specs []struct {
		Tool      string         `json:"tool"`
		Namespace string         `json:"namespace"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(raw, &specs); err != nil || len(specs) == 0 {
		return nil, fmt.Errorf("observe needs params.commands: a list of {tool, namespace?, arguments?}")
	}
	s := observeStrategy{}
	for i, c := range specs {
		if c.Tool == "" {
			return nil, fmt.Errorf("observe: command #%d has no tool", i+1)
		}
		s.cmds = append(s.cmds, command.Command{ToolName: c.Tool, Namespace: c.Namespace, Parameters: c.Arguments, ToolType: command.DataCollection})
	}
	return s, nil
}

func (observeStrategy) Name() string { return Observe }
func (observeStrategy) Phase() Phase { return DataCollection }

func (s observeStrategy) Execute(ctx context.Context, pc *Context) error {
	obs := make([]prompts.Observation, len(s.cmds))
	var wg sync.WaitGroup
	for i, c := range s.cmds {
		if c.Namespace == "" {
			c.Namespace = pc.agent.App
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One command per call: observations are independent, so one
			// failing must not skip the others.
			r := pc.dispatcher.Execute(ctx, []command.Command{c})
			obs[i] = prompts.Observation{Name: c.String(), Content: shownResult(pc, r[0])}
		}()
	}
	wg.Wait()
	pc.Observe(obs...)
	return nil
}

// ResultText renders a result for the model: the payload on success, the
// error otherwise, cut to max characters (0: no cap) with the cut marked.
func ResultText(r command.Result, max int) string {
	var b strings.Builder
	switch r.Status {
	case command.Success:
		if len(r.Result) == 0 {
			b.WriteString("success")
		} else {
			var s string
			if json.Unmarshal(r.Result, &s) == nil {
				b.WriteString(s)
			} else {
				// Canonical, so that a replay (keys sorted by the
				// recording) shows the model the same bytes. Images are
				// attached to the request, not spelt out in base64.
				b.Write(prompts.CanonicalJSON(stripImages(r.Result)))
			}
		}
	case command.None: // left running in the background: its status
		b.WriteString("still running: ")
		b.Write(prompts.CanonicalJSON(r.Result))
	default:
		b.WriteString(string(r.Status))
		if r.Error != "" {
			b.WriteString(": ")
			b.WriteString(r.Error)
		}
	}
	return truncate(b.String(), max)
}

func truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n…[truncated %d characters]", len(s)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

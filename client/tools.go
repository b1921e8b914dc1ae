package client

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/tools"
)

// Risk is how much harm a tool can do: the policy's unit. It is the tools
// package's class, so that a Go tool declares the class the policy reads.
type Risk = tools.Risk

// Risk classes, from least to most worrying.
const (
	RiskRead        = tools.RiskRead
	RiskWrite       = tools.RiskWrite
	RiskDestructive = tools.RiskDestructive
	RiskExternal    = tools.RiskExternal
)

// MetaRisk is the ToolInfo.Meta key that carries a tool's risk class. Meta
// travels unchanged over AIP, so UFO peers see it as an extra field.
const MetaRisk = tools.MetaRisk

func riskList() string { return "read, write, destructive, external" }

// RiskOf returns the risk class recorded in a tool info, or "" if none.
func RiskOf(info command.ToolInfo) Risk {
	r, _ := info.Meta[MetaRisk].(string)
	return Risk(r)
}

// riskFromAnnotations reads MCP's hints with MCP's defaults: a tool that
// says nothing may be destructive and reach the open world. A read-only
// tool is read whatever its openWorldHint: mcp-go sets that hint on every
// tool, so it cannot tell a web search from a file read.
func riskFromAnnotations(a mcp.ToolAnnotation) Risk {
	yes := func(b *bool) bool { return b != nil && *b }
	unlessNo := func(b *bool) bool { return b == nil || *b }
	switch {
	case yes(a.ReadOnlyHint):
		return RiskRead
	case unlessNo(a.DestructiveHint):
		return RiskDestructive
	case unlessNo(a.OpenWorldHint):
		return RiskExternal
	}
	return RiskWrite
}

// declaredRisk is the class a tool declares in its _meta (Saucer's own
// tools do), which says what MCP's hints cannot (a write tool that reaches
// the network), or "" if none.
func declaredRisk(meta map[string]any) Risk {
	r, _ := meta[MetaRisk].(string)
	if Risk(r).Valid() {
		return Risk(r)
	}
	return ""
}

// streamsOf lists what a tool streams: progress, as any MCP tool may, and
// the streams it declares in its _meta.
func streamsOf(info command.ToolInfo) []string {
	streams := []string{EventProgress}
	declared, _ := info.Meta[tools.MetaStreams].([]any)
	for _, s := range declared {
		if s, ok := s.(string); ok && s != "" && !slices.Contains(streams, s) {
			streams = append(streams, s)
		}
	}
	return streams
}

// tool is one cached tool: what the agents see, and what the client needs
// to run it.
type tool struct {
	info   command.ToolInfo
	risk   Risk
	schema *jsonschema.Schema // nil: the server's schema could not be compiled
	// waits: the tool declares that waiting is its work (tools.MetaWaits),
	// so a call to it is never detached.
	waits bool
}

// checkPattern refuses a malformed path.Match pattern.
func checkPattern(p string) error {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("tool pattern %q is malformed (use *, ? and [a-z])", p)
	}
	return nil
}

func matchesAny(name string, pats []string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// visible applies the server's allow and deny filters.
func (s Server) visible(name string) bool {
	if len(s.Allow) > 0 && !matchesAny(name, s.Allow) {
		return false
	}
	return !matchesAny(name, s.Deny)
}

// timeoutFor is the call timeout of one tool: per tool, per server, or the
// client's.
func (s Server) timeoutFor(name string, def time.Duration) time.Duration {
	if d, ok := s.ToolTimeouts[name]; ok && d > 0 {
		return d
	}
	if s.CallTimeout > 0 {
		return s.CallTimeout
	}
	return def
}

// buildTools turns a server's tools/list into the cache: filtered, typed,
// classed, with compiled input schemas.
func buildTools(s Server, list []mcp.Tool, log *slog.Logger) (map[string]*tool, error) {
	out := make(map[string]*tool, len(list))
	for _, t := range list {
		if !s.visible(t.Name) {
			continue
		}
		info, err := toolInfo(s, t)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		risk := declaredRisk(info.Meta)
		if risk == "" {
			risk = riskFromAnnotations(t.Annotations)
		}
		for _, pat := range mapKeys(s.Risks) {
			if ok, _ := path.Match(pat, t.Name); ok {
				risk = s.Risks[pat]
				break
			}
		}
		if info.Meta == nil {
			info.Meta = map[string]any{}
		}
		info.Meta[MetaRisk] = string(risk)
		waits, _ := info.Meta[tools.MetaWaits].(bool)
		tl := &tool{info: info, risk: risk, waits: waits}
		if len(info.InputSchema) > 0 {
			if tl.schema, err = compileSchema(info.InputSchema); err != nil {
				// A schema we cannot read must not make the tool unusable:
				// the server still checks its own arguments.
				log.Warn("input schema not compiled; arguments go unchecked", "tool", t.Name, "error", err)
			}
		}
		out[t.Name] = tl
	}
	return out, nil
}

// toolInfo describes an MCP tool in AIP's terms.
func toolInfo(s Server, t mcp.Tool) (command.ToolInfo, error) {
	toolType := s.ToolType
	if toolType == "" {
		toolType = command.Action
		if ro := t.Annotations.ReadOnlyHint; ro != nil && *ro {
			toolType = command.DataCollection
		}
	}
	info := command.ToolInfo{
		Key:         command.ToolKey(toolType, t.Name),
		Name:        t.Name,
		Title:       t.Title,
		Namespace:   s.Namespace,
		ToolType:    toolType,
		Description: t.Description,
	}
	if info.Title == "" {
		info.Title = t.Annotations.Title
	}
	var err error
	if info.InputSchema, err = schemaJSON(t.RawInputSchema, t.InputSchema, t.InputSchema.Type != ""); err != nil {
		return info, fmt.Errorf("input schema: %w", err)
	}
	if info.OutputSchema, err = schemaJSON(t.RawOutputSchema, t.OutputSchema, t.OutputSchema.Type != ""); err != nil {
		return info, fmt.Errorf("output schema: %w", err)
	}
	if info.Annotations, err = toMap(t.Annotations); err != nil {
		return info, fmt.Errorf("annotations: %w", err)
	}
	if t.Meta != nil {
		if info.Meta, err = toMap(t.Meta); err != nil {
			return info, fmt.Errorf("meta: %w", err)
		}
	}
	return info, nil
}

func schemaJSON(raw json.RawMessage, structured any, present bool) (json.RawMessage, error) {
	if len(raw) > 0 {
		return raw, nil
	}
	if !present {
		return nil, nil
	}
	return json.Marshal(structured)
}

// toMap re-encodes v as a JSON object; an empty object becomes nil.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// quoteList renders names as "a", "b".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

package trajectory

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"hash/maphash"
	"slices"
	"strconv"
	"unsafe"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/jsonw"
	"github.com/saucerhq/saucer/llm"
)

// eventEncoder writes an event's line: the bytes json.Marshal gives for
// the event, written field by field without reflection (TestEncoderMatches
// Marshal and FuzzEncoderMatchesMarshal compare them over every recorded
// event and generated ones; a field the encoder does not know fails them).
// On the way it notes what the writer would otherwise scan the line again
// for: whether a value may be large enough to move into an artifact, and
// where the long strings and raw values are, which the redactor may pass
// over when it has seen them before.
type eventEncoder struct {
	b   []byte
	err error
	// threshold is the writer's artifact threshold; large is set when a
	// value under one of externalKeys may reach it (see mark).
	threshold int
	large     bool
	// long are the parts of b, each from a quote to a quote, of the
	// strings, raw values, and objects and lists (messages, tools,
	// results...) of minLong bytes or more.
	long []part
	// clean is the redactor's room to work in on the line (kept with the
	// encoder, which writers share).
	clean cleanScratch
	// escaped are the raw values and parameter maps (which may hold raw
	// values) written with a backslash in them: their strings may hide a
	// secret behind escapes the device chose (see Redactor.decodeEscaped).
	escaped []span
}

// part is a span of a line, and how many parts nest in it: those just
// before it in eventEncoder.long, which lists a part after those in it.
type part struct{ lo, hi, inner int }

// minLong is the shortest value whose span the encoder notes: shorter ones
// cost the redactor less to read than to look up.
const minLong = 256

// encode sets w to e's line, or returns encoding/json's error for it.
func (w *eventEncoder) encode(e *Event, threshold int) error {
	w.b, w.long, w.err, w.large, w.threshold = w.b[:0], w.long[:0], nil, false, threshold
	w.escaped = w.escaped[:0]
	w.event(e)
	if w.err == nil {
		return nil
	}
	// A value JSON cannot hold, or one left to encoding/json: it says
	// which, or writes the line.
	cp := *e // only this branch's copy goes to the heap, not every event
	b, err := json.Marshal(&cp)
	if err != nil {
		return err
	}
	w.b, w.long, w.large = append(w.b[:0], b...), w.long[:0], true
	w.escaped = w.escaped[:0]
	w.escapes(0)
	return nil
}

// event appends e's line.
func (w *eventEncoder) event(e *Event) {
	w.b = append(w.b, `{"seq":`...)
	w.b = strconv.AppendInt(w.b, int64(e.Seq), 10)
	w.b = append(w.b, `,"time":`...)
	w.b, w.err = appendTime(w.b, e.Time)
	w.str("type", string(e.Type))
	w.strOmit("agent", e.Agent)
	w.strOmit("role", e.Role)
	w.strOmit("app", e.App)
	w.strOmit("subtask", e.Subtask)
	w.intOmit("round", int64(e.Round))
	w.intOmit("step", int64(e.Step))
	w.strOmit("phase", e.Phase)
	if e.Session != nil {
		w.key("session")
		w.session(e.Session)
	}
	if e.Call != nil {
		w.key("call")
		w.call(e.Call)
	}
	list(w, "commands", e.Commands, w.command)
	list(w, "results", e.Results, w.result)
	if e.Decision != nil {
		w.key("decision")
		w.decision(e.Decision)
	}
	w.strOmit("status", e.Status)
	w.strOmit("from", e.From)
	w.strOmit("to", e.To)
	list(w, "observations", e.Observations, func(o *Observation) {
		w.b = append(w.b, '{')
		w.str("name", o.Name)
		w.str("content", o.Content)
		w.b = append(w.b, '}')
	})
	if k := e.Knowledge; k != nil {
		w.object("knowledge", func() {
			w.strOmit("text", k.Text)
			w.stringsOmit("sources", k.Sources)
		})
	}
	if e.Usage != nil {
		w.key("usage")
		w.usage(e.Usage)
	}
	w.intOmit("attempts", int64(e.Attempts))
	w.floatOmit("duration_ms", e.DurationMS)
	if len(e.TimingsMS) > 0 {
		w.key("timings_ms")
		w.do(appendFloatMap(w.b, e.TimingsMS))
	}
	w.stringsOmit("errors", e.Errors)
	w.strOmit("error", e.Error)
	if n := e.Note; n != nil {
		w.object("note", func() {
			w.str("subtask", n.Subtask)
			w.str("app", n.App)
			w.str("status", n.Status)
			w.str("result", n.Result)
		})
	}
	if e.End != nil {
		w.key("end")
		w.end(e.End)
	}
	if e.Progress != nil {
		w.key("progress")
		w.progress(e.Progress)
	}
	w.b = append(w.b, '}')
}

func (w *eventEncoder) session(s *Session) {
	w.b = append(w.b, '{')
	w.str("id", s.ID)
	w.str("format", s.Format)
	w.str("task", s.Task)
	w.strOmit("answer_format", s.AnswerFormat)
	w.str("model", s.Model)
	w.strOmit("mode", s.Mode)
	w.strOmit("version", s.Version)
	w.strOmit("config", s.Config)
	if p := s.Prompts; p != nil {
		w.object("prompts", func() {
			w.strOmit("dir", p.Dir)
			w.strOmit("digest", p.Digest)
		})
	}
	if s.Device != nil {
		w.key("device")
		w.device(s.Device)
	}
	w.strOmit("workdir", s.Workdir)
	w.stringMapOmit("apps", s.Apps)
	w.stringMapOmit("labels", s.Labels)
	w.b = append(w.b, '}')
}

func (w *eventEncoder) device(d *command.DeviceInfo) {
	defer w.note(len(w.b), len(w.long))
	w.b = append(w.b, '{')
	w.strOmit("device_id", d.DeviceID)
	w.str("platform", d.Platform)
	w.strOmit("os_version", d.OSVersion)
	w.strOmit("arch", d.Arch)
	w.int("cpu_count", int64(d.CPUCount))
	w.strOmit("cpu_model", d.CPUModel)
	w.float("memory_total_gb", d.MemoryTotalGB)
	w.str("hostname", d.Hostname)
	w.strOmit("ip_address", d.IPAddress)
	w.key("supported_features")
	w.b = jsonw.AppendStrings(w.b, d.Features)
	w.strOmit("platform_type", d.PlatformType)
	w.strOmit("schema_version", d.SchemaVersion)
	if len(d.Custom) > 0 {
		w.anyMap("custom_metadata", d.Custom)
	}
	w.strOmit("user", d.User)
	w.strOmit("uid", d.UID)
	w.strOmit("home", d.Home)
	w.strOmit("workdir", d.WorkDir)
	w.strOmit("sandbox", d.Sandbox)
	w.stringsOmit("labels", d.Labels)
	w.b = append(w.b, '}')
}

func (w *eventEncoder) call(c *Call) {
	w.b = append(w.b, '{')
	w.int("n", int64(c.N))
	w.key("request")
	w.request(&c.Request)
	if b := c.Base; b != nil {
		w.object("base", func() {
			w.int("call", int64(b.Call))
			w.int("messages", int64(b.Messages))
			w.boolOmit("tools", b.Tools)
		})
	}
	if r := c.Response; r != nil {
		w.object("response", func() {
			w.key("message")
			w.message(&r.Message)
			w.key("usage")
			w.usage(&r.Usage)
			w.strOmit("finish_reason", r.FinishReason)
			w.strOmit("model", r.Model)
			w.strOmit("spec", r.Spec)
		})
	}
	if e := c.Error; e != nil {
		w.object("error", func() {
			w.str("kind", e.Kind)
			w.str("message", e.Message)
			w.floatOmit("retry_after_ms", e.RetryAfterMS)
		})
	}
	w.stringsOmit("fallbacks", c.Fallbacks)
	w.float("latency_ms", c.LatencyMS)
	w.b = append(w.b, '}')
}

func (w *eventEncoder) request(r *llm.Request) {
	w.b = append(w.b, '{')
	w.key("messages")
	if r.Messages == nil {
		w.b = append(w.b, "null"...)
	} else {
		items(w, r.Messages, w.message)
	}
	if len(r.Tools) > 0 {
		w.key("tools")
		all, inner := len(w.b), len(w.long)
		items(w, r.Tools, func(t *llm.Tool) {
			defer w.note(len(w.b), len(w.long))
			w.b = append(w.b, '{')
			w.str("name", t.Name)
			w.strOmit("description", t.Description)
			if len(t.Parameters) > 0 {
				w.raw("parameters", t.Parameters)
			}
			w.b = append(w.b, '}')
		})
		w.note(all, inner)
	}
	w.strOmit("tool_choice", r.ToolChoice)
	w.boolOmit("json", r.JSON)
	if r.Temperature != nil {
		w.float("temperature", *r.Temperature)
	}
	w.intOmit("max_tokens", int64(r.MaxTokens))
	w.stringsOmit("stop", r.Stop)
	if c := r.Computer; c != nil {
		w.object("computer", func() {
			w.int("width", int64(c.Width))
			w.int("height", int64(c.Height))
		})
	}
	w.b = append(w.b, '}')
}

func (w *eventEncoder) message(m *llm.Message) {
	defer w.note(len(w.b), len(w.long))
	w.b = append(w.b, '{')
	w.str("role", string(m.Role))
	w.strOmit("content", m.Content)
	list(w, "images", m.Images, func(im *llm.Image) {
		w.b = append(w.b, '{')
		w.strOmit("url", im.URL)
		w.strOmit("mime_type", im.MIMEType)
		if len(im.Data) > 0 {
			w.key("data")
			start := len(w.b)
			w.b = append(w.b, '"')
			w.b = base64.StdEncoding.AppendEncode(w.b, im.Data)
			w.b = append(w.b, '"')
			w.mark("data", start, false)
		}
		w.strOmit("detail", im.Detail)
		w.b = append(w.b, '}')
	})
	list(w, "tool_calls", m.ToolCalls, func(tc *llm.ToolCall) {
		w.b = append(w.b, '{')
		w.strOmit("id", tc.ID)
		w.str("name", tc.Name)
		w.str("arguments", tc.Arguments)
		if len(tc.Raw) > 0 {
			w.raw("raw", tc.Raw)
		}
		w.b = append(w.b, '}')
	})
	w.strOmit("tool_call_id", m.ToolCallID)
	w.strOmit("name", m.Name)
	list(w, "acknowledged", m.Acknowledged, func(c *llm.SafetyCheck) {
		w.b = append(w.b, '{')
		w.str("id", c.ID)
		w.strOmit("code", c.Code)
		w.strOmit("message", c.Message)
		w.b = append(w.b, '}')
	})
	w.b = append(w.b, '}')
}

func (w *eventEncoder) usage(u *llm.Usage) {
	w.b = append(w.b, '{')
	w.int("prompt_tokens", int64(u.PromptTokens))
	w.int("completion_tokens", int64(u.CompletionTokens))
	w.intOmit("cached_tokens", int64(u.CachedTokens))
	w.int("total_tokens", int64(u.TotalTokens))
	w.boolOmit("estimated", u.Estimated)
	w.b = append(w.b, '}')
}

func (w *eventEncoder) decision(d *Decision) {
	defer w.note(len(w.b), len(w.long))
	w.b = append(w.b, '{')
	w.strOmit("observation", d.Observation)
	w.strOmit("thought", d.Thought)
	w.str("status", d.Status)
	w.stringsOmit("plan", d.Plan)
	w.strOmit("comment", d.Comment)
	w.strOmit("result", d.Result)
	list(w, "actions", d.Actions, func(a *Action) {
		w.b = append(w.b, '{')
		w.str("function", a.Function)
		w.anyMap("arguments", a.Arguments)
		w.strOmit("call_id", a.CallID)
		w.strOmit("invalid", a.Invalid)
		w.b = append(w.b, '}')
	})
	w.b = append(w.b, '}')
}

// command writes c as its MarshalJSON does: null for an unset call id.
func (w *eventEncoder) command(c *command.Command) {
	defer w.note(len(w.b), len(w.long))
	w.b = append(w.b, '{')
	w.str("tool_name", c.ToolName)
	w.anyMap("parameters", c.Parameters)
	w.str("tool_type", string(c.ToolType))
	w.strNull("call_id", c.CallID)
	w.strOmit("namespace", c.Namespace)
	w.b = append(w.b, '}')
}

// result writes r as its MarshalJSON does: null for unset fields and an
// empty payload.
func (w *eventEncoder) result(r *command.Result) {
	defer w.note(len(w.b), len(w.long))
	w.b = append(w.b, '{')
	w.str("status", string(r.Status))
	w.strNull("error", r.Error)
	payload := r.Result
	if len(payload) == 0 {
		payload = nil
	}
	w.raw("result", payload)
	w.strNull("namespace", r.Namespace)
	w.strNull("call_id", r.CallID)
	w.b = append(w.b, '}')
}

func (w *eventEncoder) end(e *End) {
	w.b = append(w.b, '{')
	w.str("status", e.Status)
	w.str("answer", e.Answer)
	w.boolOmit("cancelled", e.Cancelled)
	w.int("rounds", int64(e.Rounds))
	w.int("steps", int64(e.Steps))
	w.key("usage")
	w.usage(&e.Usage)
	w.strOmit("cost", e.Cost)
	if e.CostUSD != nil {
		w.float("cost_usd", *e.CostUSD)
	}
	w.strOmit("error", e.Error)
	w.strOmit("budget", e.Budget)
	w.float("duration_ms", e.DurationMS)
	w.b = append(w.b, '}')
}

func (w *eventEncoder) progress(p *command.Progress) {
	w.b = append(w.b, '{')
	w.str("call_id", p.CallID)
	w.strOmit("namespace", p.Namespace)
	w.strOmit("tool_name", p.Tool)
	w.float("progress", p.Progress)
	w.floatOmit("total", p.Total)
	w.strOmit("message", p.Message)
	w.strOmit("state", string(p.State))
	w.intOmit("elapsed_ms", p.ElapsedMS)
	w.b = append(w.b, '}')
}

// key writes an object's key, after a comma unless it is the first.
func (w *eventEncoder) key(name string) {
	if w.b[len(w.b)-1] != '{' {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':')
}

// object writes name's object, fields writing its members.
func (w *eventEncoder) object(name string, fields func()) {
	w.key(name)
	w.b = append(w.b, '{')
	fields()
	w.b = append(w.b, '}')
}

// list writes name's list, elem writing each item; an empty list is left
// out, as omitempty leaves it.
func list[T any](w *eventEncoder, name string, all []T, elem func(*T)) {
	if len(all) > 0 {
		w.key(name)
		items(w, all, elem)
	}
}

// items writes a list's brackets and, elem writing each, its items.
func items[T any](w *eventEncoder, all []T, elem func(*T)) {
	w.b = append(w.b, '[')
	for i := range all {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		elem(&all[i])
	}
	w.b = append(w.b, ']')
}

func (w *eventEncoder) str(name, s string) {
	w.key(name)
	start := len(w.b)
	if len(s) < minSeen {
		w.b = jsonw.AppendString(w.b, s)
	} else {
		key := unsafe.Slice(unsafe.StringData(s), len(s))
		h := maphash.String(seenSeed, s)
		if enc, ok := stringEncodings.get(h, key); ok {
			w.b = append(w.b, enc...)
		} else {
			w.b = jsonw.AppendString(w.b, s)
			stringEncodings.add(h, key, slices.Clone(w.b[start:]))
		}
	}
	w.mark(name, start, false)
}

func (w *eventEncoder) strOmit(name, s string) {
	if s != "" {
		w.str(name, s)
	}
}

// strNull writes null for an empty s.
func (w *eventEncoder) strNull(name, s string) {
	if s == "" {
		w.key(name)
		w.b = append(w.b, "null"...)
		return
	}
	w.str(name, s)
}

func (w *eventEncoder) stringsOmit(name string, v []string) {
	if len(v) > 0 {
		w.key(name)
		w.b = jsonw.AppendStrings(w.b, v)
	}
}

func (w *eventEncoder) stringMapOmit(name string, m map[string]string) {
	if len(m) > 0 {
		w.key(name)
		w.b = jsonw.AppendStringMap(w.b, m)
	}
}

func (w *eventEncoder) int(name string, v int64) {
	w.key(name)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *eventEncoder) intOmit(name string, v int64) {
	if v != 0 {
		w.int(name, v)
	}
}

func (w *eventEncoder) float(name string, f float64) {
	w.key(name)
	w.do(appendFloat(w.b, f))
}

func (w *eventEncoder) floatOmit(name string, f float64) {
	if f != 0 {
		w.float(name, f)
	}
}

func (w *eventEncoder) boolOmit(name string, v bool) {
	if v {
		w.key(name)
		w.b = append(w.b, "true"...)
	}
}

// raw writes a raw JSON value (nil: null).
func (w *eventEncoder) raw(name string, v []byte) {
	w.key(name)
	start := len(w.b)
	if len(v) < minSeen {
		w.do(appendRaw(w.b, v))
	} else {
		h := maphash.Bytes(seenSeed, v)
		if enc, ok := rawEncodings.get(h, v); ok {
			w.b = append(w.b, enc...)
		} else {
			b, err := appendRaw(w.b, v)
			w.do(b, err)
			if err == nil {
				rawEncodings.add(h, v, slices.Clone(w.b[start:]))
			}
		}
	}
	w.escapes(start)
	w.mark(name, start, true)
}

// anyMap writes a map of JSON-like values (nil: null).
func (w *eventEncoder) anyMap(name string, m map[string]any) {
	w.key(name)
	start := len(w.b)
	w.do(appendMap(w.b, m))
	w.escapes(start)
	w.mark(name, start, true)
}

// escapes notes the value written from start when it holds a backslash.
func (w *eventEncoder) escapes(start int) {
	if bytes.IndexByte(w.b[start:], '\\') >= 0 {
		w.escaped = append(w.escaped, span{start, len(w.b)})
	}
}

// do takes what an append function returned.
func (w *eventEncoder) do(b []byte, err error) {
	w.b = b
	if err != nil && w.err == nil {
		w.err = err
	}
}

// mark looks at the value written under name from start: it is large
// when it may move into an artifact (see Writer.externalize: a string of
// threshold bytes or more under one of externalKeys, a result or
// parameters object or array whose encoding is that long; a structured
// value may hold such a string at any depth, so one of threshold bytes
// counts anywhere, and half of it under result or parameters, as
// re-encoding can lengthen it), and long when the redactor may pass over it.
func (w *eventEncoder) mark(name string, start int, structured bool) {
	n := len(w.b) - start
	switch {
	case structured && (n >= w.threshold || n >= w.threshold/2 && (name == "result" || name == "parameters")):
		w.large = true
	case !structured && n-2 >= w.threshold && externalKeys[name]:
		w.large = true
	}
	w.note(start, len(w.long))
}

// note notes the value written from start as a part of the line, with the
// parts noted since there (from inner on) in it.
func (w *eventEncoder) note(start, inner int) {
	if len(w.b)-start < minLong {
		return
	}
	// From the first quote to the last: a match of a pattern that cannot
	// match a quote lies wholly inside or wholly outside.
	v := w.b[start:]
	lo, hi := bytes.IndexByte(v, '"'), bytes.LastIndexByte(v, '"')+1
	if lo >= 0 && hi-lo >= minLong {
		w.long = append(w.long, part{start + lo, start + hi, len(w.long) - inner})
	}
}

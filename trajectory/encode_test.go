package trajectory

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

// sameAsMarshal fails t unless the encoder writes for e what json.Marshal
// does, or fails where it fails. It reports whether the encoder left to
// encoding/json an event that it encodes.
func sameAsMarshal(t testing.TB, what string, e *Event) (left bool) {
	t.Helper()
	want, werr := json.Marshal(e)
	var enc eventEncoder
	err := enc.encode(e, DefaultArtifactThreshold)
	got := enc.b
	switch {
	case werr != nil && err == nil:
		t.Fatalf("%s: json.Marshal fails (%v), the encoder wrote %s", what, werr, got)
	case werr == nil && err != nil:
		t.Fatalf("%s: the encoder fails (%v), json.Marshal wrote %s", what, err, want)
	case werr == nil && !bytes.Equal(got, want):
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
	return werr == nil && enc.err != nil
}

// recordedEvents are the events of the repository's recordings, as
// readers return them and as their lines hold them (requests as
// continuations, artifacts as references).
func recordedEvents(t testing.TB) []Event {
	dirs, _ := filepath.Glob("../evals/suites/recordings/*")
	dirs = append(dirs, "testdata/served-task")
	var events []Event
	for _, dir := range dirs {
		tr, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, tr.Events...)
		f, err := os.Open(filepath.Join(dir, EventsFile))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var e Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
		}
		f.Close()
	}
	if len(events) < 100 {
		t.Fatalf("only %d recorded events", len(events))
	}
	return events
}

// TestEncoderMatchesMarshal: the writer's encoder writes, for every event
// of the repository's recordings and for events generated with every
// field of every type set (so a field added later and not taught to the
// encoder fails here), the bytes json.Marshal gives, and fails where it
// fails.
func TestEncoderMatchesMarshal(t *testing.T) {
	for i, e := range recordedEvents(t) {
		if sameAsMarshal(t, "recorded event "+string(e.Type)+" #"+strconv.Itoa(i), &e) {
			t.Errorf("recorded event %s #%d: the encoder left it to encoding/json", e.Type, i)
		}
	}
	full := &generator{r: rand.New(rand.NewPCG(1, 2)), full: true}
	for i := range 200 {
		var e Event
		full.fill(reflect.ValueOf(&e).Elem(), 0)
		if i == 0 {
			if unset := full.unset(reflect.ValueOf(e), "Event"); unset != "" {
				t.Fatalf("the full generator left %s unset", unset)
			}
		}
		sameAsMarshal(t, "full event #"+strconv.Itoa(i), &e)
	}
	g := &generator{r: rand.New(rand.NewPCG(3, 4))}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	left := 0
	for i := range n {
		var e Event
		g.fill(reflect.ValueOf(&e).Elem(), 0)
		if sameAsMarshal(t, "generated event #"+strconv.Itoa(i), &e) {
			left++
		}
	}
	// Only the values nested thousands deep are left to encoding/json.
	if left > n/20 {
		t.Errorf("the encoder left %d of %d generated events to encoding/json", left, n)
	}
}

// FuzzEncoderMatchesMarshal: strings, raw values and floats from the
// fuzzer, in the places the writer encodes them, give json.Marshal's
// bytes or its failure.
func FuzzEncoderMatchesMarshal(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\u2028\u2029", "\xff\xfe", "\x00\x1f\t\n\r\b\f", `{ "a" : [1, 2.5e-7, -0, true, null] }`,
		`"x<y"`, " 12 ", `{"a":}`, "[[[[", `"\u00e9\ud800"`, `"\x"`, "1e", "-", "01", "\"\xe2\x80\xa8\""} {
		f.Add(s, 1.5)
	}
	f.Fuzz(func(t *testing.T, s string, x float64) {
		e := Event{Type: TypeDispatch, Agent: s, Time: time.Unix(0, int64(x)).UTC(), DurationMS: x,
			Commands: []command.Command{{ToolName: s, Parameters: map[string]any{s: x, "s": s, "l": []any{s, x, nil}}}},
			Results:  []command.Result{{Status: command.Success, Result: json.RawMessage(s), Error: s}},
			Call: &Call{Request: llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: s}},
				Tools: []llm.Tool{{Name: s, Parameters: json.RawMessage(s)}}}, LatencyMS: x},
			TimingsMS: map[string]float64{s: x}}
		sameAsMarshal(t, "fuzzed event", &e)
	})
}

// generator fills values at random, each field of a struct set in full
// mode.
type generator struct {
	r    *rand.Rand
	full bool
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
	anyType  = reflect.TypeFor[any]()
)

var genStrings = []string{"", "a", "plain text", "<b>&amp;</b>", "line\nbreak\ttab\r", "\x00\x01\x1f\x7f", "quote \" and \\ backslash",
	"\u2028\u2029", "\xff\xfe invalid", "caf\xc3", "é ü 日本", "\U0001F600", "sk-test-secret-value-0123456789", "a=b&c=d",
	strings.Repeat("long <value> ", 40)}

// jsonMaxDepth is how deeply encoding/json lets arrays and objects nest.
const jsonMaxDepth = 10000

var genRaws = []string{`null`, `{}`, `[]`, ` { "a" : 1 , "b" : [ true , false , null ] } `, "\n\t\"str<>&\u2028\"\r ", `-0.5e+10`,
	`{"nested":{"deep":[1,2,{"x":"y"}]}}`, `"\xff"`, `0`, `{"a":}`, `[1,]`, `01`, `"\u00"`, `tru`, `{"a" 1}`, "\"\x01\"", `1 2`, ``,
	`{"content":"` + strings.Repeat("x", 300) + `"}`, strings.Repeat("[", jsonMaxDepth) + strings.Repeat("]", jsonMaxDepth),
	strings.Repeat("[", jsonMaxDepth+1) + strings.Repeat("]", jsonMaxDepth+1), `[` + strings.Repeat(`"item",`, 60) + `"end"]`}

var genFloats = []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, -2.5e-300, math.MaxFloat64,
	math.SmallestNonzeroFloat64, 3.14159, 1e100}

func (g *generator) pick(n int) int { return g.r.IntN(n) }

func (g *generator) fill(v reflect.Value, depth int) {
	if v.Type() == timeType {
		ts := []time.Time{time.Date(2026, 11, 26, 13, 0, 0, g.r.IntN(1e9), time.UTC), {}, time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600)),
			time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(g.r.Int64N(1e10), 0).UTC()}
		if g.full {
			v.Set(reflect.ValueOf(ts[0]))
		} else {
			v.Set(reflect.ValueOf(ts[g.pick(len(ts))]))
		}
		return
	}
	if v.Type() == rawType {
		var raws []string
		if g.full {
			raws = genRaws[:7]
		} else {
			raws = genRaws
		}
		s := raws[g.pick(len(raws))]
		if s == "" && g.pick(2) == 0 {
			return // nil
		}
		v.SetBytes([]byte(s))
		return
	}
	switch v.Kind() {
	case reflect.String:
		if g.full {
			v.SetString(genStrings[1+g.pick(len(genStrings)-1)])
		} else {
			v.SetString(genStrings[g.pick(len(genStrings))])
		}
	case reflect.Bool:
		v.SetBool(g.full || g.pick(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		n := g.r.Int64N(2000) - 1000
		if g.full && n == 0 {
			n = 1
		}
		v.SetInt(n)
	case reflect.Float64:
		f := genFloats[g.pick(len(genFloats))]
		if g.full && f == 0 {
			f = 2.5
		}
		if !g.full && g.pick(40) == 0 {
			f = math.NaN()
		}
		v.SetFloat(f)
	case reflect.Pointer:
		if !g.full && g.pick(3) == 0 {
			return
		}
		p := reflect.New(v.Type().Elem())
		g.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if !g.full && g.pick(3) == 0 {
				continue
			}
			g.fill(v.Field(i), depth+1)
		}
	case reflect.Slice:
		n := 1 + g.pick(3)
		if !g.full {
			switch g.pick(4) {
			case 0:
				return // nil
			case 1:
				n = 0
			}
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, n*g.pick(40))
			for i := range b {
				b[i] = byte(g.r.IntN(256))
			}
			if g.full && len(b) == 0 {
				b = []byte{1}
			}
			v.SetBytes(b)
			return
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			g.fill(s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		n := 1 + g.pick(4)
		if !g.full {
			switch g.pick(4) {
			case 0:
				return
			case 1:
				n = 0
			}
		}
		m := reflect.MakeMap(v.Type())
		for range n {
			k := reflect.New(v.Type().Key()).Elem()
			k.SetString(genStrings[g.pick(len(genStrings))])
			e := reflect.New(v.Type().Elem()).Elem()
			g.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Interface:
		if v.Type() == anyType {
			if x := g.anyValue(depth); x != nil {
				v.Set(reflect.ValueOf(x))
			}
		}
	}
}

// anyValue is a value of a map[string]any: what decoding JSON makes, and
// some other types tools build.
func (g *generator) anyValue(depth int) any {
	k := g.pick(14)
	if depth > 6 && k >= 7 {
		k = 0
	}
	switch k {
	case 0:
		return nil
	case 1:
		return genStrings[g.pick(len(genStrings))]
	case 2:
		return genFloats[g.pick(len(genFloats))]
	case 3:
		return g.pick(2) == 0
	case 4:
		return g.pick(1000) - 500
	case 5:
		return int64(g.r.Int64())
	case 6:
		return json.Number([]string{"12", "1.5e3", "", "x1"}[g.pick(4)])
	case 7:
		var l []any
		if g.pick(4) > 0 {
			l = []any{}
			for range g.pick(4) {
				l = append(l, g.anyValue(depth+1))
			}
		}
		return l
	case 8, 9:
		var m map[string]any
		if g.pick(4) > 0 {
			m = map[string]any{}
			for range g.pick(4) {
				m[genStrings[g.pick(len(genStrings))]] = g.anyValue(depth + 1)
			}
		}
		return m
	case 10:
		return []string{genStrings[g.pick(len(genStrings))]}
	case 11:
		return map[string]string{"k": genStrings[g.pick(len(genStrings))]}
	case 12:
		return json.RawMessage(genRaws[g.pick(len(genRaws))])
	default:
		return struct {
			A float32 `json:"a"`
			B uint8
		}{float32(genFloats[g.pick(len(genFloats))]), uint8(g.pick(256))}
	}
}

// unset names a field of v (or of a value it holds) that is zero.
func (g *generator) unset(v reflect.Value, path string) string {
	if v.IsZero() {
		return path
	}
	switch v.Kind() {
	case reflect.Pointer:
		return g.unset(v.Elem(), path)
	case reflect.Struct:
		if v.Type() == timeType {
			return ""
		}
		for i := range v.NumField() {
			if u := g.unset(v.Field(i), path+"."+v.Type().Field(i).Name); u != "" {
				return u
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() != reflect.Uint8 {
			for i := range v.Len() {
				if u := g.unset(v.Index(i), path+"[]"); u != "" {
					return u
				}
			}
		}
	}
	return ""
}

// TestEncoderSeesWhatMayMoveOut: a line the encoder does not call large
// has no value that moves into an artifact, at a threshold that many
// generated values reach.
func TestEncoderSeesWhatMayMoveOut(t *testing.T) {
	const threshold = 200
	g := &generator{r: rand.New(rand.NewPCG(7, 8))}
	large := 0
	for i := range 3000 {
		var e Event
		g.fill(reflect.ValueOf(&e).Elem(), 0)
		var enc eventEncoder
		if err := enc.encode(&e, threshold); err != nil {
			continue
		}
		if enc.large {
			large++
			continue
		}
		v, err := decodeGeneric(enc.b)
		if err != nil {
			t.Fatal(err)
		}
		w := &Writer{threshold: threshold, store: store{written: map[string]bool{}}}
		if _, err := w.externalize(v); err != nil {
			t.Fatal(err)
		}
		if len(w.store.queued) > 0 || len(w.store.moved) > 0 {
			t.Fatalf("event %d: the encoder did not see a value that moves out (%s): %s", i, w.store.queued[0].rel, enc.b)
		}
	}
	if large == 0 || large == 3000 {
		t.Fatalf("%d of 3000 events large: the test tells nothing", large)
	}
}

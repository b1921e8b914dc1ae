package prompts

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
	"unsafe"

	"github.com/saucerhq/saucer/command"
)

//go:embed templates/*.tmpl
var embedded embed.FS

const templateExt = ".tmpl"

// Set is a parsed collection of prompt templates: the embedded defaults,
// possibly with some replaced or added from an override directory. A Set is
// safe for concurrent use.
type Set struct {
	root *template.Template
	// files maps each file-level template name to the file it came from, so
	// that errors found after parsing can still name the file.
	files map[string]string
	funcs template.FuncMap
	// fast holds the templates the fast path renders (see fast.go).
	fast map[string]bool
	fastSites
	// again are RenderAgain's renders, by their data's version;
	// partials the fast path's renders of templates called from
	// templates, with a copy of their data.
	again    versioned
	partials renders
	// answerFormat is the task's, for the agents' data (WithAnswerFormat).
	answerFormat string
}

// Load parses the embedded templates and then, if overrideDir is not empty,
// every *.tmpl file in that directory: a file replaces the template of the
// same name (app_examples.tmpl replaces "app_examples") or adds a new one,
// such as a partial used by another override. An empty file blanks its
// template out. A file's final line break is dropped, so that a partial
// adds no blank line where it is used. Errors name the file and, for syntax
// errors, the line.
func Load(overrideDir string) (*Set, error) {
	if overrideDir == "" {
		return LoadFS(nil, "")
	}
	info, err := os.Stat(overrideDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("prompts: override directory %s does not exist; create it or leave the setting empty to use the built-in prompts", overrideDir)
		}
		return nil, fmt.Errorf("prompts: override directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("prompts: override directory %s is a file, not a directory", overrideDir)
	}
	return LoadFS(os.DirFS(overrideDir), overrideDir)
}

// LoadFS is Load with the overrides read from the *.tmpl files at the top
// of fsys (an embed.FS, say; nil means none). label names fsys in errors
// ("my-prompts", "embedded overrides"); the files' names follow it.
func LoadFS(fsys fs.FS, label string) (*Set, error) {
	sources := map[string]source{}
	entries, err := fs.Glob(embedded, "templates/*"+templateExt)
	if err != nil {
		return nil, fmt.Errorf("prompts: list embedded templates: %w", err)
	}
	for _, p := range entries {
		b, err := embedded.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("prompts: read embedded %s: %w", p, err)
		}
		sources[templateName(p)] = source{file: "embedded " + p, text: string(b)}
	}
	var overridden []string
	if fsys != nil {
		overridden, err = readOverrides(fsys, label, sources)
		if err != nil {
			return nil, err
		}
	}

	s := &Set{files: map[string]string{}, funcs: funcs(), fast: map[string]bool{},
		fastSites: fastSites{calls: map[*parse.IdentifierNode]any{}, fields: map[*string]*fieldSite{}}}
	s.root = template.New("").Funcs(s.funcs).Option("missingkey=error")
	// Defaults first, overrides last: a {{define}} inside an override then
	// wins over a default of the same name.
	for _, name := range parseOrder(sources, overridden) {
		src := sources[name]
		// A file's final line break ends the file, not the prompt text:
		// without this every partial would add a blank line where used.
		text := strings.TrimSuffix(strings.TrimSuffix(src.text, "\n"), "\r")
		if _, err := s.root.New(name).Parse(text); err != nil {
			return nil, fmt.Errorf("prompts: %s: %w", src.file, err)
		}
		s.files[name] = src.file
	}
	if err := s.checkReferences(); err != nil {
		return nil, err
	}
	for _, t := range s.root.Templates() {
		s.fast[t.Name()] = s.fastable(t.Name(), map[string]bool{})
	}
	if err := s.dryRun(); err != nil {
		return nil, err
	}
	return s, nil
}

// dryRun renders the agents' templates once with sample data in both
// modes, so that a field that does not exist ({{.Nope}}) or a function
// given the wrong value is reported when the set is loaded, naming the
// file, rather than in the middle of a session. Branches the sample does
// not take are not checked.
func (s *Set) dryRun() error {
	tool := command.ToolInfo{Key: "files.read_file", Name: "read_file", Namespace: "files", ToolType: command.Action,
		Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	note := Note{Subtask: "list the files", App: "shell", Status: "FINISH", Result: "3 files"}
	dev := command.DeviceInfo{Platform: "linux", Hostname: "box"}
	for _, mode := range []string{ModeTools, ModeJSON} {
		host := HostData{Request: "tidy up", AnswerFormat: "a single number", Device: dev, Mode: mode, Round: 2, MaxRounds: 3, Notes: []Note{note},
			Apps: []App{{Name: "files", Description: "Files.", Tools: []command.ToolInfo{tool}}}}
		app := AppData{Request: "tidy up", AnswerFormat: "a single number", Subtask: "read a.txt", App: "files", Tools: []command.ToolInfo{tool}, Device: dev,
			Observations: []Observation{{Name: "list_dir", Content: "a.txt"}}, EarlierNotes: []Note{note}, Notes: []Note{note}, Mode: mode, Step: 2, MaxSteps: 2}
		for _, name := range []string{"host_system", "host_user", "host_examples", "host_status", "app_system", "app_user", "app_examples", "app_status"} {
			data := any(host)
			if strings.HasPrefix(name, "app_") {
				data = app
			}
			if s.root.Lookup(name) == nil {
				continue
			}
			if _, err := s.Render(name, data); err != nil {
				return fmt.Errorf("%w (found by a trial render at load; fix the template)", err)
			}
		}
	}
	cons := ConstellationData{Request: "tidy up", Devices: []ConstellationDevice{{ID: "box", Platform: "linux", Apps: []string{"files"}}},
		Graph: "- a [pending] on box: list the files", Events: []string{"a completed"}, Step: 2, MaxSteps: 3}
	for _, name := range []string{"constellation_system", "constellation_status"} {
		if s.root.Lookup(name) == nil {
			continue
		}
		if _, err := s.Render(name, cons); err != nil {
			return fmt.Errorf("%w (found by a trial render at load; fix the template)", err)
		}
	}
	return nil
}

type source struct{ file, text string }

func templateName(p string) string {
	return strings.TrimSuffix(path.Base(filepath.ToSlash(p)), templateExt)
}

// readOverrides puts the override files into sources and returns their
// names, sorted.
func readOverrides(fsys fs.FS, label string, sources map[string]source) ([]string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("prompts: read overrides %s: %w", label, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), templateExt) {
			continue
		}
		b, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("prompts: read override: %w", err)
		}
		name := templateName(e.Name())
		sources[name] = source{file: filepath.Join(label, e.Name()), text: string(b)}
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

func parseOrder(sources map[string]source, overridden []string) []string {
	isOverride := map[string]bool{}
	for _, n := range overridden {
		isOverride[n] = true
	}
	var order []string
	for name := range sources {
		if !isOverride[name] {
			order = append(order, name)
		}
	}
	sort.Strings(order)
	return append(order, overridden...)
}

// checkReferences finds {{template "x"}} calls to templates that do not
// exist, which text/template would only report when that branch runs,
// perhaps in the middle of a session.
func (s *Set) checkReferences() error {
	for _, t := range s.root.Templates() {
		if t.Tree == nil || t.Root == nil {
			continue
		}
		var missing error
		walk(t.Root, func(n *parse.TemplateNode) {
			if missing == nil && s.root.Lookup(n.Name) == nil {
				loc, _ := t.ErrorContext(n)
				missing = fmt.Errorf("prompts: %s: %s uses template %q, which is not defined; add %s%s or fix the name (known: %s)",
					s.files[t.ParseName], loc, n.Name, n.Name, templateExt, strings.Join(s.Names(), ", "))
			}
		})
		if missing != nil {
			return missing
		}
	}
	return nil
}

func walk(n parse.Node, visit func(*parse.TemplateNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, visit)
		}
	case *parse.TemplateNode:
		visit(n)
	case *parse.IfNode:
		walk(n.List, visit)
		walk(n.ElseList, visit)
	case *parse.RangeNode:
		walk(n.List, visit)
		walk(n.ElseList, visit)
	case *parse.WithNode:
		walk(n.List, visit)
		walk(n.ElseList, visit)
	}
}

// Names lists the templates in the set, sorted.
func (s *Set) Names() []string {
	var names []string
	for _, t := range s.root.Templates() {
		if t.Name() != "" {
			names = append(names, t.Name())
		}
	}
	sort.Strings(names)
	return names
}

// Render executes the named template with data and returns the text with
// surrounding white space trimmed. If data has a Validate method (HostData
// and AppData do), it is called first.
func (s *Set) Render(name string, data any) (string, error) {
	data = s.withTask(data)
	t := s.root.Lookup(name)
	if t == nil || name == "" {
		return "", fmt.Errorf("prompts: no template named %q; known: %s", name, strings.Join(s.Names(), ", "))
	}
	if v, ok := data.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return "", fmt.Errorf("prompts: render %s: %w", name, err)
		}
	}
	if s.fast[name] {
		if out, err := s.renderFast(t, data); err == nil {
			return out, nil
		}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		file := s.fileOf(t)
		// The fault may be in a partial: name the file it came from.
		var ee template.ExecError
		if errors.As(err, &ee) && ee.Name != name {
			if pt := s.root.Lookup(ee.Name); pt != nil {
				file = s.fileOf(pt)
			}
		}
		return "", fmt.Errorf("prompts: render %s (fault in %s): %w", name, file, err)
	}
	return strings.TrimSpace(buf.String()), nil
}

// RenderAgain is Render for a template that is rendered with the same
// data again and again: an agent's system prompt and first turn, the same
// for every agent of an app on one device and in every case of a replayed
// suite. It keeps the last few renders of each template, each keyed on
// the version of its data (dataVersion: a hash of all of it, taken at
// every call), and gives the one whose version is data's instead of
// rendering it again. The data may change in place between calls (a
// middleware editing the tool list): its version changes with it.
func (s *Set) RenderAgain(name string, data any) (string, error) {
	data = s.withTask(data)
	version, ok := dataVersion(data)
	if !ok {
		return s.Render(name, data)
	}
	if out, ok := s.again.find(name, version); ok {
		return out, nil
	}
	out, err := s.Render(name, data)
	if err == nil {
		s.again.add(name, version, out)
	}
	return out, err
}

// renders are the last renders of each partial the fast path made, each
// with a copy of its data (copyData) that no caller can change.
type renders struct {
	mu   sync.Mutex
	last map[string]*[rendersKept]render
}

// rendersKept is how many renders of each template are kept: the agents
// of one task (a host and the apps it uses) each have their own.
const rendersKept = 4

type render struct {
	data reflect.Value
	out  string
}

func (r *renders) find(name string, data reflect.Value) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kept := r.last[name]; kept != nil {
		for _, k := range kept {
			if k.data.IsValid() && sameData(k.data, data, 0) {
				return k.out, true
			}
		}
	}
	return "", false
}

func (r *renders) add(name string, data reflect.Value, out string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]*[rendersKept]render{}
	}
	kept := r.last[name]
	if kept == nil {
		kept = new([rendersKept]render)
		r.last[name] = kept
	}
	copy(kept[1:], kept[:rendersKept-1]) // the newest first
	kept[0] = render{data, out}
}

// sameData is reflect.DeepEqual for template data, without its record of
// the pointers it followed (data has no cycles, and keeping that record
// cost as much as rendering). Past a depth of 32,
// or at a function or channel, it says false: a render is only a render
// saved, never a wrong one.
func sameData(a, b reflect.Value, depth int) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	if a.Type() != b.Type() || depth > 32 {
		return false
	}
	switch a.Kind() {
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return a.Float() == b.Float()
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameData(a.Field(i), b.Field(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		if a.Type() == toolInfosType {
			// The slices themselves, read where they are: Interface
			// would box each header on the heap, at every step.
			return sameTools(unsafe.Slice((*command.ToolInfo)(a.UnsafePointer()), a.Len()),
				unsafe.Slice((*command.ToolInfo)(b.UnsafePointer()), b.Len()), depth)
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if !sameData(a.Index(i), b.Index(i), depth+1) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		if a.UnsafePointer() == b.UnsafePointer() {
			return true
		}
		for it := a.MapRange(); it.Next(); {
			bv := b.MapIndex(it.Key())
			if !bv.IsValid() || !sameData(it.Value(), bv, depth+1) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameData(a.Elem(), b.Elem(), depth+1)
	}
	return false // functions, channels, complex numbers, unsafe pointers
}

var toolInfosType = reflect.TypeFor[[]command.ToolInfo]()

// sameTools is sameData for lists of tools, the most of an agent's data,
// without reflection but for their maps.
func sameTools(a, b []command.ToolInfo, depth int) bool {
	sameRaw := func(x, y []byte) bool { return (x == nil) == (y == nil) && bytes.Equal(x, y) }
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Key != y.Key || x.Name != y.Name || x.Title != y.Title || x.Namespace != y.Namespace || x.ToolType != y.ToolType ||
			x.Description != y.Description || !sameRaw(x.InputSchema, y.InputSchema) || !sameRaw(x.OutputSchema, y.OutputSchema) ||
			!sameData(reflect.ValueOf(x.Meta), reflect.ValueOf(y.Meta), depth+2) ||
			!sameData(reflect.ValueOf(x.Annotations), reflect.ValueOf(y.Annotations), depth+2) {
			return false
		}
	}
	return true
}

func (s *Set) fileOf(t *template.Template) string {
	if t.Tree != nil {
		if f, ok := s.files[t.ParseName]; ok {
			return f
		}
	}
	return s.files[t.Name()]
}

// funcs are the functions templates may use, besides text/template's own.
func funcs() template.FuncMap {
	return template.FuncMap{
		"json":        compactJSON,
		"pretty":      prettyJSON,
		"indent":      indent,
		"join":        join,
		"upper":       strings.ToUpper,
		"lower":       strings.ToLower,
		"trim":        strings.TrimSpace,
		"firstLine":   firstLine,
		"add":         func(a, b int) int { return a + b },
		"replySchema": func(statuses ...string) string { return string(ReplySchemaFor(statuses)) },
	}
}

// compactJSON writes v as one line of JSON. A json.RawMessage is written
// canonically (keys sorted, see CanonicalJSON); HTML characters are not
// escaped, since prompts are not HTML.
func compactJSON(v any) (string, error) {
	if raw, ok := asRaw(v); ok {
		if len(raw) == 0 {
			return "null", nil
		}
		if !json.Valid(raw) {
			return "", fmt.Errorf("json: invalid JSON %.60q", raw)
		}
		return string(CanonicalJSON(raw)), nil
	}
	return encode(v, "")
}

// prettyJSON writes v as JSON indented by two spaces.
func prettyJSON(v any) (string, error) {
	if raw, ok := asRaw(v); ok {
		if len(raw) == 0 {
			return "null", nil
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, CanonicalJSON(raw), "", "  "); err != nil {
			return "", fmt.Errorf("pretty: %w", err)
		}
		return buf.String(), nil
	}
	return encode(v, "  ")
}

func asRaw(v any) (json.RawMessage, bool) {
	switch r := v.(type) {
	case json.RawMessage:
		return r, true
	case *json.RawMessage:
		if r == nil {
			return nil, true
		}
		return *r, true
	}
	return nil, false
}

func encode(v any, indent string) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", indent)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("json: %w", err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}

// indent puts n spaces before every non-empty line of s (empty lines stay
// empty, so the prompt has no trailing spaces).
func indent(n int, s string) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

// join joins the elements of a slice with sep; non-string elements are
// formatted with fmt.
func join(sep string, list any) (string, error) {
	if ss, ok := list.([]string); ok {
		return strings.Join(ss, sep), nil
	}
	v := reflect.ValueOf(list)
	if !v.IsValid() {
		return "", nil
	}
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return "", fmt.Errorf("join: want a list, got %T", list)
	}
	parts := make([]string, v.Len())
	for i := range parts {
		parts[i] = fmt.Sprint(v.Index(i).Interface())
	}
	return strings.Join(parts, sep), nil
}

// firstLine is the first non-empty line of s, trimmed: a short summary of a
// long tool description.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// Package yamlkeys finds the keys of a YAML document that a Go type has no
// field for, and names them in the document's own words: the path of keys
// that leads to each (agent.max_stepz), its line, and the known key it
// most likely meant. yaml.v3's own error for them names Go types ("field
// max_stepz not found in type config.Agent"), which a user cannot act on.
package yamlkeys

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v4"
)

// Unknown is a key the type has no field for.
type Unknown struct {
	// Path is the key's path in the document: keys joined by dots, list
	// items by [index] (agent.app_strategies[1].nmae).
	Path string
	Line int
	// Suggest is the known key it most likely meant, as a path, or "".
	Suggest string
}

// Describe says what is wrong, naming the file (or whatever name says
// the document is) when name is not empty.
func (u Unknown) Describe(name string) string {
	where := fmt.Sprintf("at line %d", u.Line)
	if name != "" {
		where = fmt.Sprintf("in %s line %d", name, u.Line)
	}
	s := fmt.Sprintf("unknown key %q %s", u.Path, where)
	if u.Suggest != "" {
		s += fmt.Sprintf("; did you mean %q?", u.Suggest)
	}
	return s
}

// Describe says what is wrong with all of them, a line each.
func Describe(name string, us []Unknown) string {
	parts := make([]string, len(us))
	for i, u := range us {
		parts[i] = u.Describe(name)
	}
	return strings.Join(parts, "\n")
}

// Find returns the keys of data's first document that into (a struct, or
// a pointer to one) has no field for, in document order. Maps take any
// key; a type that decodes itself (yaml.Unmarshaler) is its own judge. A
// document that does not parse is an error, as yaml.v3 words it.
func Find(data []byte, into any) ([]Unknown, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	w := &walker{root: reflect.TypeOf(into)}
	w.walk(doc.Content[0], w.root, "", 0)
	return w.found, nil
}

type walker struct {
	root  reflect.Type
	found []Unknown
}

var (
	unmarshaler         = reflect.TypeFor[yaml.Unmarshaler]()
	obsoleteUnmarshaler = reflect.TypeFor[interface{ UnmarshalYAML(func(any) error) error }]()
)

// maxDepth bounds the walk (aliases can make a document deep).
const maxDepth = 64

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n == nil || t == nil || depth > maxDepth {
		return
	}
	if n.Kind == yaml.AliasNode {
		w.walk(n.Alias, t, path, depth+1)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if decodesItself(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // a wrong type: the decoder says so
		}
		fields := fieldsOf(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" && k.Tag == "!!merge" {
				w.merge(v, t, path, depth+1)
				continue
			}
			f, ok := fields.byName[k.Value]
			if !ok {
				if !fields.anyKey {
					w.found = append(w.found, Unknown{Path: join(path, k.Value), Line: k.Line, Suggest: w.suggest(fields, path, k.Value)})
				}
				continue
			}
			w.walk(v, f, join(path, k.Value), depth+1)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.walk(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), depth+1)
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), depth+1)
		}
	}
}

// merge walks the mappings a merge key (<<: *anchor) brings in.
func (w *walker) merge(v *yaml.Node, t reflect.Type, path string, depth int) {
	if v.Kind == yaml.SequenceNode {
		for _, m := range v.Content {
			w.walk(m, t, path, depth)
		}
		return
	}
	w.walk(v, t, path, depth)
}

func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshaler) || pt.Implements(unmarshaler) || t.Implements(obsoleteUnmarshaler) || pt.Implements(obsoleteUnmarshaler)
}

// fields are a struct's keys as yaml.v3 decodes them.
type fields struct {
	byName map[string]reflect.Type
	names  []string // in declaration order, for suggestions
	// anyKey is set by an inline map, which takes the keys no field has.
	anyKey bool
}

func fieldsOf(t reflect.Type) fields {
	fs := fields{byName: map[string]reflect.Type{}}
	addFields(&fs, t, 0)
	return fs
}

func addFields(fs *fields, t reflect.Type, depth int) {
	if depth > 8 {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch ft.Kind() {
			case reflect.Struct:
				addFields(fs, ft, depth+1)
			case reflect.Map:
				fs.anyKey = true
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name) // yaml.v3's default key
		}
		if _, dup := fs.byName[name]; !dup {
			fs.names = append(fs.names, name)
		}
		fs.byName[name] = f.Type
	}
}

// suggest is the known key that key most likely meant: a sibling a
// typo away, else the same key where the type has it elsewhere (a key
// written one level too high or too low).
func (w *walker) suggest(fs fields, path, key string) string {
	best, bestD := "", max(2, len(key)/3)+1
	for _, name := range fs.names {
		if d := distance(strings.ToLower(key), name); d < bestD {
			best, bestD = name, d
		}
	}
	if best != "" {
		return join(path, best)
	}
	if p := findKey(w.root, key); p != "" && p != join(path, key) {
		return p
	}
	return ""
}

// findKey is the path of the first field named key in t's tree of
// structs, breadth first (maps and lists are not entered: their paths
// depend on the document).
func findKey(t reflect.Type, key string) string {
	type item struct {
		t    reflect.Type
		path string
	}
	queue := []item{{t, ""}}
	seen := map[reflect.Type]bool{}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		ft := it.t
		for ft != nil && ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft == nil || ft.Kind() != reflect.Struct || seen[ft] || decodesItself(ft) {
			continue
		}
		seen[ft] = true
		fs := fieldsOf(ft)
		if _, ok := fs.byName[key]; ok {
			return join(it.path, key)
		}
		for _, name := range fs.names {
			queue = append(queue, item{fs.byName[name], join(it.path, name)})
		}
	}
	return ""
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// join adds key to path; a key with dots, spaces or other marks (a
// pattern such as ollama:*) is put in single quotes.
func join(path, key string) string {
	if !plainKey.MatchString(key) {
		key = "'" + strings.ReplaceAll(key, "'", "''") + "'"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// distance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each cost one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range rb {
		d[0][j+1] = j + 1
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

package prompts

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"text/template/parse"
)

// The fast path renders a template by walking its parse tree with direct
// calls, where text/template calls every function and comparison through
// reflect.Value.Call and looks every field up by name: a prompt is
// rendered at every step, and that reflection cost more than the rest of
// a replayed step. It knows the part of the template language the prompts
// use (text, actions, if, with, range over lists, template calls, fields,
// variables, this package's functions and the comparisons); a template
// that uses anything else is rendered by text/template, and so is any
// render the fast path meets something unusual in (a method, a map
// without the key, a nil pointer, a function's error). text/template
// stays the definition: the tests render every template both ways.

// errSlow stops the fast path: text/template renders this one.
var errSlow = errors.New("prompts: render with text/template")

// fastBuiltins are text/template's functions the fast path knows; the
// functions of funcs() it calls through their Go types.
var fastBuiltins = map[string]bool{"and": true, "or": true, "not": true, "len": true, "index": true,
	"eq": true, "ne": true, "lt": true, "le": true, "gt": true, "ge": true}

// fastable reports whether the fast path knows everything template name
// uses, the templates it calls included.
func (s *Set) fastable(name string, seen map[string]bool) bool {
	if seen[name] {
		return true // checked, or being checked higher up
	}
	seen[name] = true
	t := s.root.Lookup(name)
	if t == nil || t.Tree == nil || t.Root == nil {
		return false
	}
	ok := true
	var node func(n parse.Node)
	pipe := func(p *parse.PipeNode, decls int) {
		if p == nil {
			return
		}
		if p.IsAssign || len(p.Decl) > decls {
			ok = false
		}
		for _, c := range p.Cmds {
			for i, a := range c.Args {
				switch a := a.(type) {
				case *parse.IdentifierNode:
					f, isFunc := s.funcs[a.Ident]
					ok = ok && i == 0 && (isFunc || fastBuiltins[a.Ident])
					s.calls[a] = f
				case *parse.FieldNode:
					ok = ok && (len(c.Args) == 1 || i > 0)
					s.addSites(a.Ident)
				case *parse.VariableNode:
					ok = ok && (len(c.Args) == 1 || i > 0)
					s.addSites(a.Ident[1:])
				case *parse.DotNode, *parse.StringNode, *parse.BoolNode:
				case *parse.NumberNode:
					ok = ok && a.IsInt && strings.Trim(a.Text, "0123456789") == "" && a.Text != ""
				case *parse.PipeNode:
					ok = ok && (i > 0 || len(c.Args) == 1)
					node(a)
				default:
					ok = false
				}
			}
		}
	}
	node = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					node(c)
				}
			}
		case *parse.TextNode, *parse.CommentNode:
		case *parse.ActionNode:
			pipe(n.Pipe, 1)
		case *parse.PipeNode:
			pipe(n, 0)
		case *parse.IfNode:
			pipe(n.Pipe, 1)
			node(n.List)
			node(n.ElseList)
		case *parse.WithNode:
			pipe(n.Pipe, 1)
			node(n.List)
			node(n.ElseList)
		case *parse.RangeNode:
			pipe(n.Pipe, 2)
			node(n.List)
			node(n.ElseList)
		case *parse.TemplateNode:
			pipe(n.Pipe, 0)
			ok = ok && s.fastable(n.Name, seen)
		default:
			ok = false // break, continue, and what later Go versions add
		}
	}
	node(t.Root)
	return ok
}

// fastSites are what the fast path learns about a template where it
// runs, found once when the set is loaded: the function each identifier
// names, and for each field name in the text the field it last found
// there, so that a field is looked up by name once per type, not at
// every render.
type fastSites struct {
	calls  map[*parse.IdentifierNode]any // nil for a builtin
	fields map[*string]*fieldSite        // by the address of the name in its node
}

// fieldSite remembers the last type a field name was looked up in.
type fieldSite struct{ last atomic.Pointer[fieldHit] }

type fieldHit struct {
	t   reflect.Type
	idx []int // nil when the fast path leaves this field to text/template
}

func (s *Set) addSites(names []string) {
	for i := range names {
		if s.fields[&names[i]] == nil {
			s.fields[&names[i]] = &fieldSite{}
		}
	}
}

// fastState is one fast render.
type fastState struct {
	set   *Set
	buf   *bytes.Buffer
	vars  []fastVar
	depth int
}

type fastVar struct {
	name string
	v    reflect.Value
}

// scratch is a render's buffer and variables, reused by later renders.
type scratch struct {
	buf  bytes.Buffer
	vars [4]fastVar // $ and a range's variables
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// renderFast renders t as text/template would, or fails with errSlow.
func (s *Set) renderFast(t *template.Template, data any) (string, error) {
	sc := scratches.Get().(*scratch)
	sc.buf.Reset()
	defer func() {
		sc.vars = [4]fastVar{} // the data is not kept alive by the pool
		scratches.Put(sc)
	}()
	dot := reflect.ValueOf(data)
	sc.vars[0] = fastVar{"$", dot}
	st := &fastState{set: s, buf: &sc.buf, vars: sc.vars[:1]}
	if err := st.walk(dot, t.Root); err != nil {
		return "", err
	}
	return strings.TrimSpace(sc.buf.String()), nil
}

func (s *fastState) walk(dot reflect.Value, n parse.Node) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := s.walk(dot, c); err != nil {
				return err
			}
		}
		return nil
	case *parse.TextNode:
		s.buf.Write(n.Text)
		return nil
	case *parse.CommentNode:
		return nil
	case *parse.ActionNode:
		v, err := s.pipeline(dot, n.Pipe)
		if err != nil || len(n.Pipe.Decl) > 0 {
			return err
		}
		return s.print(v)
	case *parse.IfNode:
		return s.ifOrWith(dot, n.Pipe, n.List, n.ElseList, false)
	case *parse.WithNode:
		return s.ifOrWith(dot, n.Pipe, n.List, n.ElseList, true)
	case *parse.RangeNode:
		return s.rangeOver(dot, n)
	case *parse.TemplateNode:
		t := s.set.root.Lookup(n.Name)
		if t == nil || t.Root == nil || s.depth >= 100 {
			return errSlow
		}
		v, err := s.pipeline(dot, n.Pipe)
		if err != nil {
			return err
		}
		// A partial's text depends on its data alone: the notes of
		// finished subtasks, say, are the same at every step until
		// another finishes.
		if out, ok := s.set.partials.find(n.Name, v); ok {
			s.buf.WriteString(out)
			return nil
		}
		start := s.buf.Len()
		inner := fastState{set: s.set, buf: s.buf, vars: []fastVar{{"$", v}}, depth: s.depth + 1}
		if err := inner.walk(v, t.Root); err != nil {
			return err
		}
		// Kept with a copy of its data: the caller may change its lists
		// and maps once Render returns.
		if kept, ok := copyData(v, 0); ok {
			s.set.partials.add(n.Name, kept, string(s.buf.Bytes()[start:]))
		}
		return nil
	}
	return errSlow
}

func (s *fastState) ifOrWith(dot reflect.Value, p *parse.PipeNode, list, elseList *parse.ListNode, with bool) error {
	defer s.pop(len(s.vars))
	v, err := s.pipeline(dot, p)
	if err != nil {
		return err
	}
	truth, ok := isTrue(indirectInterface(v))
	switch {
	case !ok:
		return errSlow
	case truth && with:
		return s.walk(v, list)
	case truth:
		return s.walk(dot, list)
	case elseList != nil:
		return s.walk(dot, elseList)
	}
	return nil
}

func (s *fastState) rangeOver(dot reflect.Value, r *parse.RangeNode) error {
	defer s.pop(len(s.vars))
	v, err := s.pipeline(dot, r.Pipe)
	if err != nil {
		return err
	}
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return errSlow
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Invalid:
	case reflect.Slice, reflect.Array:
		if v.Len() == 0 {
			break
		}
		top := len(s.vars)
		for i := 0; i < v.Len(); i++ {
			elem := v.Index(i)
			// As text/template: the last variable gets the element, the
			// one before it the index.
			switch len(r.Pipe.Decl) {
			case 2:
				s.vars[top-2].v = reflect.ValueOf(i)
				fallthrough
			case 1:
				s.vars[top-1].v = elem
			}
			err := s.walk(elem, r.List)
			s.pop(top)
			if err != nil {
				return err
			}
		}
		return nil
	default:
		return errSlow // maps, integers, functions, channels
	}
	if r.ElseList != nil {
		return s.walk(dot, r.ElseList)
	}
	return nil
}

func (s *fastState) pop(mark int) { s.vars = s.vars[:mark] }

func (s *fastState) pipeline(dot reflect.Value, p *parse.PipeNode) (reflect.Value, error) {
	var v reflect.Value
	if p == nil {
		return v, nil
	}
	for i, c := range p.Cmds {
		var err error
		if v, err = s.command(dot, c, v, i > 0); err != nil {
			return v, err
		}
		// As text/template: an interface{} is looked into.
		if v.Kind() == reflect.Interface && v.Type().NumMethod() == 0 {
			v = reflect.ValueOf(v.Interface())
		}
	}
	for _, d := range p.Decl {
		s.vars = append(s.vars, fastVar{d.Ident[0], v})
	}
	return v, nil
}

// command evaluates one command of a pipeline; final is the value of the
// command before it (when hasFinal), which a function gets as its last
// argument.
func (s *fastState) command(dot reflect.Value, c *parse.CommandNode, final reflect.Value, hasFinal bool) (reflect.Value, error) {
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		return s.call(dot, id, c.Args[1:], final, hasFinal)
	}
	if hasFinal || len(c.Args) > 1 {
		return reflect.Value{}, errSlow
	}
	return s.arg(dot, c.Args[0])
}

// arg evaluates an argument as it is, with no conversion.
func (s *fastState) arg(dot reflect.Value, n parse.Node) (reflect.Value, error) {
	switch n := n.(type) {
	case *parse.DotNode:
		return dot, nil
	case *parse.StringNode:
		return reflect.ValueOf(&n.Text).Elem(), nil // not boxed anew each time
	case *parse.BoolNode:
		return reflect.ValueOf(n.True), nil
	case *parse.NumberNode:
		return reflect.ValueOf(int(n.Int64)), nil
	case *parse.FieldNode:
		return s.fields(dot, n.Ident)
	case *parse.VariableNode:
		v, ok := s.variable(n.Ident[0])
		if !ok {
			return v, errSlow
		}
		return s.fields(v, n.Ident[1:])
	case *parse.PipeNode:
		defer s.pop(len(s.vars))
		return s.pipeline(dot, n)
	case *parse.IdentifierNode:
		return s.call(dot, n, nil, reflect.Value{}, false)
	}
	return reflect.Value{}, errSlow
}

func (s *fastState) variable(name string) (reflect.Value, bool) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].v, true
		}
	}
	return reflect.Value{}, false
}

// fields follows a chain of struct fields and map keys. Anything else (a
// method, a missing key, a nil pointer) is left to text/template.
func (s *fastState) fields(v reflect.Value, names []string) (reflect.Value, error) {
	for i, name := range names {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return v, errSlow
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			site := s.set.fields[&names[i]]
			if site == nil {
				return v, errSlow
			}
			hit := site.last.Load()
			if hit == nil || hit.t != v.Type() {
				hit = &fieldHit{t: v.Type(), idx: fieldIndex(v.Type(), name)}
				site.last.Store(hit)
			}
			idx := hit.idx
			if idx == nil {
				return v, errSlow
			}
			f, err := v.FieldByIndexErr(idx)
			if err != nil {
				return v, errSlow
			}
			v = f
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String || v.Type().Key() != stringType || v.Type().NumMethod() > 0 {
				return v, errSlow
			}
			e := v.MapIndex(reflect.ValueOf(name))
			if !e.IsValid() {
				return v, errSlow // missingkey=error
			}
			v = e
		default:
			return v, errSlow
		}
	}
	return v, nil
}

// fieldIndex is the index of the exported field name of struct type t,
// or nil when text/template would look further (a method of that name) or
// fail.
func fieldIndex(t reflect.Type, name string) []int {
	_, m1 := t.MethodByName(name)
	_, m2 := reflect.PointerTo(t).MethodByName(name)
	if f, ok := t.FieldByName(name); ok && f.IsExported() && !m1 && !m2 {
		return f.Index
	}
	return nil
}

var (
	stringType      = reflect.TypeFor[string]()
	intType         = reflect.TypeFor[int]()
	errorType       = reflect.TypeFor[error]()
	fmtStringerType = reflect.TypeFor[fmt.Stringer]()
)

// print writes a value as text/template's printValue does.
func (s *fastState) print(v reflect.Value) error {
	switch {
	case !v.IsValid():
		s.buf.WriteString("<no value>")
		return nil
	case v.Type() == stringType:
		s.buf.WriteString(v.String())
		return nil
	case v.Type() == intType:
		s.buf.Write(strconv.AppendInt(s.buf.AvailableBuffer(), v.Int(), 10))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Chan, reflect.Func, reflect.Interface:
		return errSlow
	}
	t := reflect.PointerTo(v.Type())
	if t.Implements(errorType) || t.Implements(fmtStringerType) {
		return errSlow // which method text/template calls depends on addressability
	}
	fmt.Fprint(s.buf, v.Interface())
	return nil
}

// call calls a function of the set or a builtin.
func (s *fastState) call(dot reflect.Value, id *parse.IdentifierNode, argNodes []parse.Node, final reflect.Value, hasFinal bool) (reflect.Value, error) {
	name := id.Ident
	if name == "and" || name == "or" {
		// Lazily, as text/template: the first argument that decides.
		var v reflect.Value
		for _, a := range argNodes {
			var err error
			if v, err = s.arg(dot, a); err != nil {
				return v, err
			}
			if t, _ := isTrue(indirectInterface(v)); t == (name == "or") {
				return v, nil
			}
		}
		if hasFinal {
			v = final
		}
		if len(argNodes) == 0 && !hasFinal {
			return v, errSlow
		}
		return v, nil
	}
	var buf [4]reflect.Value
	args := buf[:0]
	for _, a := range argNodes {
		v, err := s.arg(dot, a)
		if err != nil {
			return v, err
		}
		args = append(args, v)
	}
	if hasFinal {
		args = append(args, final)
	}
	if f := s.set.calls[id]; f != nil {
		return callFunc(f, args)
	}
	return builtin(name, args)
}

// callFunc calls one of funcs() by its Go type, with text/template's
// rules for arguments (an argument must be of the parameter's type; an
// interface{} parameter takes anything). A function that fails is left
// to text/template, which says so in its own words.
func callFunc(fn any, args []reflect.Value) (reflect.Value, error) {
	var out string
	var err error
	switch f := fn.(type) {
	case func(string) string:
		if len(args) != 1 || !is[string](args[0]) {
			return reflect.Value{}, errSlow
		}
		out = f(args[0].String())
	case func(any) (string, error):
		if len(args) != 1 {
			return reflect.Value{}, errSlow
		}
		out, err = f(anyOf(args[0]))
	case func(int, string) string:
		if len(args) != 2 || !is[int](args[0]) || !is[string](args[1]) {
			return reflect.Value{}, errSlow
		}
		out = f(int(args[0].Int()), args[1].String())
	case func(string, any) (string, error):
		if len(args) != 2 || !is[string](args[0]) {
			return reflect.Value{}, errSlow
		}
		out, err = f(args[0].String(), anyOf(args[1]))
	case func(int, int) int:
		if len(args) != 2 || !is[int](args[0]) || !is[int](args[1]) {
			return reflect.Value{}, errSlow
		}
		return reflect.ValueOf(f(int(args[0].Int()), int(args[1].Int()))), nil
	case func(...string) string:
		ss := make([]string, len(args))
		for i, a := range args {
			if !is[string](a) {
				return reflect.Value{}, errSlow
			}
			ss[i] = a.String()
		}
		out = f(ss...)
	default:
		return reflect.Value{}, errSlow
	}
	if err != nil {
		return reflect.Value{}, errSlow
	}
	return reflect.ValueOf(out), nil
}

// is reports whether v can be passed for a parameter of type T: it is of
// that type (text/template also looks into an interface holding one, and
// so may a later call; the fast path leaves that to it).
func is[T any](v reflect.Value) bool { return v.IsValid() && v.Type() == reflect.TypeFor[T]() }

// anyOf is v as an interface{} argument: nil when there is no value.
func anyOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// builtin is one of text/template's functions the prompts use, for
// arguments of the basic kinds; anything else goes to text/template.
func builtin(name string, args []reflect.Value) (reflect.Value, error) {
	switch name {
	case "not":
		if len(args) != 1 {
			return reflect.Value{}, errSlow
		}
		t, _ := isTrue(indirectInterface(args[0]))
		return reflect.ValueOf(!t), nil
	case "len":
		if len(args) != 1 {
			return reflect.Value{}, errSlow
		}
		v := indirectInterface(args[0])
		switch v.Kind() {
		case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
			return reflect.ValueOf(v.Len()), nil
		}
		return reflect.Value{}, errSlow
	case "index":
		if len(args) != 2 {
			return reflect.Value{}, errSlow
		}
		item, key := indirectInterface(args[0]), indirectInterface(args[1])
		switch {
		case item.Kind() == reflect.Map && key.IsValid() && key.Type() == item.Type().Key():
			if e := item.MapIndex(key); e.IsValid() {
				return e, nil
			}
			return reflect.Zero(item.Type().Elem()), nil
		case (item.Kind() == reflect.Slice || item.Kind() == reflect.Array) && key.IsValid() && key.Type() == intType:
			if i := int(key.Int()); i >= 0 && i < item.Len() {
				return item.Index(i), nil
			}
		}
		return reflect.Value{}, errSlow
	}
	if len(args) < 2 || name != "eq" && len(args) != 2 {
		return reflect.Value{}, errSlow
	}
	a := indirectInterface(args[0])
	for _, arg := range args[1:] {
		c, ok := compare(a, indirectInterface(arg))
		if !ok {
			return reflect.Value{}, errSlow
		}
		var truth bool
		switch name {
		case "eq":
			truth = c == 0
		case "ne":
			truth = c != 0
		case "lt":
			truth = c < 0
		case "le":
			truth = c <= 0
		case "gt":
			truth = c > 0
		case "ge":
			truth = c >= 0
		}
		if truth || name != "eq" {
			return reflect.ValueOf(truth), nil
		}
	}
	return reflect.ValueOf(false), nil
}

// compare orders two values of the same basic kind (bool only for
// equality: -1 stands for "differs"); ok is false for anything else.
func compare(a, b reflect.Value) (c int, ok bool) {
	if !a.IsValid() || !b.IsValid() {
		return 0, false
	}
	ka, kb := basic(a.Kind()), basic(b.Kind())
	if ka != kb || ka == 0 {
		return 0, false
	}
	switch ka {
	case reflect.Int:
		x, y := a.Int(), b.Int()
		return cmpOrdered(x, y), true
	case reflect.Uint:
		return cmpOrdered(a.Uint(), b.Uint()), true
	case reflect.Float64:
		x, y := a.Float(), b.Float()
		if x != x || y != y {
			return 0, false // NaN: left to text/template
		}
		return cmpOrdered(x, y), true
	case reflect.String:
		return strings.Compare(a.String(), b.String()), true
	}
	return 0, false
}

func cmpOrdered[T int64 | uint64 | float64](x, y T) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// basic is a kind's class for comparison: Int, Uint, Float64, String, or
// 0 for the others (bool, complex and composite values go to
// text/template).
func basic(k reflect.Kind) reflect.Kind {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return reflect.Int
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return reflect.Uint
	case reflect.Float32, reflect.Float64:
		return reflect.Float64
	case reflect.String:
		return reflect.String
	}
	return 0
}

// isTrue is text/template's truth: the zero value, an empty list, map or
// string and a nil pointer are false, a struct is true.
func isTrue(v reflect.Value) (truth, ok bool) {
	if !v.IsValid() {
		return false, true
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0, true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0, true
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.UnsafePointer, reflect.Interface:
		return !v.IsNil(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0, true
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0, true
	case reflect.Struct:
		return true, true
	}
	return false, false
}

// indirectInterface is the value an interface holds (itself otherwise).
func indirectInterface(v reflect.Value) reflect.Value {
	if v.Kind() != reflect.Interface || v.IsNil() {
		return v
	}
	return v.Elem()
}

// copyData is a deep copy of template data, for a kept render: false for
// what it cannot copy (unexported fields, functions, channels, nesting
// deeper than 32), which is then not kept.
func copyData(v reflect.Value, depth int) (reflect.Value, bool) {
	if !v.IsValid() || depth > 32 {
		return v, false
	}
	switch v.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64:
		return v, true // a value, not shared
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				return v, false
			}
			f, ok := copyData(v.Field(i), depth+1)
			if !ok {
				return v, false
			}
			out.Field(i).Set(f)
		}
		return out, true
	case reflect.Slice:
		if v.IsNil() {
			return v, true
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		if v.Type().Elem().Kind() == reflect.Uint8 {
			reflect.Copy(out, v)
			return out, true
		}
		for i := range v.Len() {
			e, ok := copyData(v.Index(i), depth+1)
			if !ok {
				return v, false
			}
			out.Index(i).Set(e)
		}
		return out, true
	case reflect.Map:
		if v.IsNil() {
			return v, true
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			e, ok := copyData(it.Value(), depth+1)
			if !ok {
				return v, false
			}
			out.SetMapIndex(it.Key(), e)
		}
		return out, true
	case reflect.Pointer:
		if v.IsNil() {
			return v, true
		}
		e, ok := copyData(v.Elem(), depth+1)
		if !ok {
			return v, false
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(e)
		return out, true
	case reflect.Interface:
		if v.IsNil() {
			return v, true
		}
		e, ok := copyData(v.Elem(), depth+1)
		if !ok {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(e)
		return out, true
	}
	return v, false
}

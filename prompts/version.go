package prompts

import (
	"hash/maphash"
	"math"
	"reflect"
	"sync"
	"unsafe"

	"github.com/saucerhq/saucer/command"
)

// A render RenderAgain keeps is keyed on the version of its data: a
// 64-bit hash of everything in it, read afresh at every call, so that a
// list or map changed in place since (a middleware editing the tool list)
// has another version, where the identity of the lists would have said
// "the same". Every string and byte list is hashed by hash/maphash with a
// seed random for each process, and the hashes are combined in the
// data's order (a map's entries in none): two different data have the
// same version with odds of about 2^-64.

// versionSeed seeds every version of the process.
var versionSeed = maphash.MakeSeed()

// versioned are the last renders of each template RenderAgain made, by
// the version of their data.
type versioned struct {
	mu   sync.Mutex
	last map[string]*[rendersKept]versionedRender
}

type versionedRender struct {
	version uint64
	out     string
	ok      bool
}

func (r *versioned) find(name string, version uint64) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if kept := r.last[name]; kept != nil {
		for _, k := range kept {
			if k.ok && k.version == version {
				return k.out, true
			}
		}
	}
	return "", false
}

func (r *versioned) add(name string, version uint64, out string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]*[rendersKept]versionedRender{}
	}
	kept := r.last[name]
	if kept == nil {
		kept = new([rendersKept]versionedRender)
		r.last[name] = kept
	}
	copy(kept[1:], kept[:rendersKept-1]) // the newest first
	kept[0] = versionedRender{version, out, true}
}

// dataVersion is the version of data; false for data that has no version
// (a function or channel in it, or deeper than 32 levels): it is rendered
// each time.
func dataVersion(data any) (uint64, bool) {
	v := reflect.ValueOf(data)
	if !v.IsValid() {
		return tagNil, true
	}
	h, ok := valueVersion(v, 0)
	return combine(maphash.String(versionSeed, v.Type().String()), h), ok
}

// The tags of what a hash stands for: a nil apart from an empty list, a
// list apart from a string.
const (
	tagNil uint64 = iota + 1
	tagFalse
	tagTrue
	tagNumber
	tagStruct
	tagList
	tagMap
	tagPointer
)

// combine folds x into acc, in order: combine(combine(t, a), b) is not
// combine(combine(t, b), a).
func combine(acc, x uint64) uint64 {
	h := acc*0x9e3779b97f4a7c15 ^ x
	h ^= h >> 32
	h *= 0xd6e8feb86659fd93
	return h ^ h>>32
}

func valueVersion(v reflect.Value, depth int) (uint64, bool) {
	if !v.IsValid() {
		return tagNil, true
	}
	if depth > 32 {
		return 0, false
	}
	switch v.Kind() {
	case reflect.String:
		return maphash.String(versionSeed, v.String()), true
	case reflect.Bool:
		if v.Bool() {
			return tagTrue, true
		}
		return tagFalse, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return combine(tagNumber, uint64(v.Int())), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return combine(tagNumber, v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return combine(tagNumber, math.Float64bits(v.Float())), true
	case reflect.Struct:
		acc := tagStruct
		for i := range v.NumField() {
			f, ok := valueVersion(v.Field(i), depth+1)
			if !ok {
				return 0, false
			}
			acc = combine(acc, f)
		}
		return acc, true
	case reflect.Slice:
		if v.IsNil() {
			return tagNil, true
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return combine(tagList, maphash.Bytes(versionSeed, v.Bytes())), true
		}
		if v.Type() == toolInfosType {
			// The list itself, read where it is: Interface would box
			// its header on the heap.
			return toolsVersion(unsafe.Slice((*command.ToolInfo)(v.UnsafePointer()), v.Len()), depth)
		}
		fallthrough
	case reflect.Array:
		acc := combine(tagList, uint64(v.Len()))
		for i := range v.Len() {
			e, ok := valueVersion(v.Index(i), depth+1)
			if !ok {
				return 0, false
			}
			acc = combine(acc, e)
		}
		return acc, true
	case reflect.Map:
		if v.IsNil() {
			return tagNil, true
		}
		if v.Type() == jsonObjectType {
			// A tool's annotations and meta, a device's custom data:
			// no reflection but for values that are not JSON's. A map
			// is its pointer: read it as one, exported or not.
			p := v.UnsafePointer()
			return objectVersion(*(*map[string]any)(unsafe.Pointer(&p)), depth)
		}
		var sum uint64 // in no order: the sum of each entry's hash
		for it := v.MapRange(); it.Next(); {
			k, ok := valueVersion(it.Key(), depth+1)
			if !ok {
				return 0, false
			}
			e, ok := valueVersion(it.Value(), depth+1)
			if !ok {
				return 0, false
			}
			sum += combine(k, e)
		}
		return combine(combine(tagMap, uint64(v.Len())), sum), true
	case reflect.Pointer:
		if v.IsNil() {
			return tagNil, true
		}
		e, ok := valueVersion(v.Elem(), depth+1)
		return combine(tagPointer, e), ok
	case reflect.Interface:
		if v.IsNil() {
			return tagNil, true
		}
		e, ok := valueVersion(v.Elem(), depth+1)
		return combine(maphash.String(versionSeed, v.Elem().Type().String()), e), ok
	}
	return 0, false // functions, channels, complex numbers, unsafe pointers
}

// toolsVersion is valueVersion for a list of tools, the most of an
// agent's data, without reflection but for their maps.
func toolsVersion(list []command.ToolInfo, depth int) (uint64, bool) {
	str := func(s string) uint64 { return maphash.String(versionSeed, s) }
	raw := func(b []byte) uint64 {
		if b == nil {
			return tagNil
		}
		return combine(tagList, maphash.Bytes(versionSeed, b))
	}
	acc := combine(tagList, uint64(len(list)))
	for i := range list {
		t := &list[i]
		meta, ok := valueVersion(reflect.ValueOf(t.Meta), depth+2)
		if !ok {
			return 0, false
		}
		annotations, ok := valueVersion(reflect.ValueOf(t.Annotations), depth+2)
		if !ok {
			return 0, false
		}
		for _, x := range [...]uint64{str(t.Key), str(t.Name), str(t.Title), str(t.Namespace), str(string(t.ToolType)),
			str(t.Description), raw(t.InputSchema), raw(t.OutputSchema), meta, annotations} {
			acc = combine(acc, x)
		}
	}
	return acc, true
}

var jsonObjectType = reflect.TypeFor[map[string]any]()

// The hashes of the names of JSON's types, as reflect names them.
var (
	typeString = maphash.String(versionSeed, "string")
	typeFloat  = maphash.String(versionSeed, "float64")
	typeBool   = maphash.String(versionSeed, "bool")
	typeList   = maphash.String(versionSeed, "[]interface {}")
	typeObject = maphash.String(versionSeed, "map[string]interface {}")
)

// objectVersion is valueVersion for a JSON object.
func objectVersion(m map[string]any, depth int) (uint64, bool) {
	if m == nil {
		return tagNil, true
	}
	if depth > 32 {
		return 0, false
	}
	var sum uint64 // in no order: the sum of each entry's hash
	for k, x := range m {
		e, ok := anyVersion(x, depth+1)
		if !ok {
			return 0, false
		}
		sum += combine(maphash.String(versionSeed, k), e)
	}
	return combine(combine(tagMap, uint64(len(m))), sum), true
}

// anyVersion is valueVersion for a value in a JSON object or array.
func anyVersion(x any, depth int) (uint64, bool) {
	switch x := x.(type) {
	case nil:
		return combine(tagPointer, tagNil), true // a nil interface, as valueVersion has it
	case string:
		return combine(typeString, maphash.String(versionSeed, x)), true
	case float64:
		return combine(typeFloat, combine(tagNumber, math.Float64bits(x))), true
	case bool:
		b := tagFalse
		if x {
			b = tagTrue
		}
		return combine(typeBool, b), true
	case []any:
		if depth > 32 {
			return 0, false
		}
		if x == nil {
			return tagNil, true
		}
		acc := combine(tagList, uint64(len(x)))
		for _, e := range x {
			h, ok := anyVersion(e, depth+1)
			if !ok {
				return 0, false
			}
			acc = combine(acc, h)
		}
		return combine(typeList, acc), true
	case map[string]any:
		h, ok := objectVersion(x, depth)
		return combine(typeObject, h), ok
	}
	v := reflect.ValueOf(x)
	h, ok := valueVersion(v, depth+1)
	return combine(maphash.String(versionSeed, v.Type().String()), h), ok
}

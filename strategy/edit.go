package strategy

import (
	"fmt"
	"strings"
)

// Edit changes a pipeline without restating it: it puts a strategy Before
// or After a named one, Replaces a named one (built-ins included), or
// Removes one. Exactly one of Before, After, Replace and Remove is set; the
// Spec (embedded) is the strategy to add, unused by Remove.
type Edit struct {
	Before  string `yaml:"before,omitempty" json:"before,omitempty"`
	After   string `yaml:"after,omitempty" json:"after,omitempty"`
	Replace string `yaml:"replace,omitempty" json:"replace,omitempty"`
	Remove  string `yaml:"remove,omitempty" json:"remove,omitempty"`
	Spec    `yaml:",inline"`
}

// Insert returns an edit that puts spec before (or, with after, after) the
// strategy named at.
func Insert(spec Spec, at string, after bool) Edit {
	if after {
		return Edit{After: at, Spec: spec}
	}
	return Edit{Before: at, Spec: spec}
}

// EditPipeline applies edits in order to a copy of pipeline (empty means
// DefaultPipeline). An edit names a strategy by its name in the pipeline;
// when a name appears twice, the first is meant.
func EditPipeline(pipeline []Spec, edits []Edit) ([]Spec, error) {
	if len(pipeline) == 0 {
		pipeline = DefaultPipeline()
	}
	out := append([]Spec(nil), pipeline...)
	for i, e := range edits {
		at, kind, err := e.target()
		if err != nil {
			return nil, fmt.Errorf("strategy edit #%d: %w", i+1, err)
		}
		idx := -1
		for j, s := range out {
			if s.Name == at {
				idx = j
				break
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("strategy edit #%d (%s %q): no strategy %q in the pipeline (%s)", i+1, kind, at, at, names(out))
		}
		if kind != "remove" && e.Name == "" {
			return nil, fmt.Errorf("strategy edit #%d (%s %q): name the strategy to put there", i+1, kind, at)
		}
		switch kind {
		case "before":
			out = append(out[:idx], append([]Spec{e.Spec}, out[idx:]...)...)
		case "after":
			out = append(out[:idx+1], append([]Spec{e.Spec}, out[idx+1:]...)...)
		case "replace":
			out[idx] = e.Spec
		case "remove":
			out = append(out[:idx], out[idx+1:]...)
		}
	}
	return out, nil
}

// target is the strategy an edit names and what it does there.
func (e Edit) target() (name, kind string, err error) {
	set := 0
	for _, c := range []struct{ name, kind string }{{e.Before, "before"}, {e.After, "after"}, {e.Replace, "replace"}, {e.Remove, "remove"}} {
		if c.name != "" {
			name, kind = c.name, c.kind
			set++
		}
	}
	if set != 1 {
		return "", "", fmt.Errorf("set exactly one of before, after, replace and remove (%d are set)", set)
	}
	return name, kind, nil
}

func names(specs []Spec) string {
	var n []string
	for _, s := range specs {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

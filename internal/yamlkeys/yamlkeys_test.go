package yamlkeys_test

import (
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/internal/yamlkeys"
)

type dur struct{ s string }

func (d *dur) UnmarshalYAML(n *yaml.Node) error { return n.Decode(&d.s) }

type Spec struct {
	Name   string         `yaml:"name"`
	Params map[string]any `yaml:"params"`
}

type edit struct {
	After string `yaml:"after"`
	Spec  `yaml:",inline"`
}

type doc struct {
	Model string `yaml:"model"`
	Agent struct {
		MaxSteps int    `yaml:"max_steps"`
		Timeout  dur    `yaml:"timeout"`
		Edits    []edit `yaml:"edits"`
	} `yaml:"agent"`
	Models  map[string]struct{ Fallbacks []string } `yaml:"models"`
	Extra   map[string]string                       `yaml:",inline"`
	Ignored string                                  `yaml:"-"`
	Plain   *struct{ Deep struct{ Leaf int } }      `yaml:"plain"`
}

type strict struct {
	Model string `yaml:"model"`
	Agent struct {
		MaxSteps int `yaml:"max_steps"`
	} `yaml:"agent"`
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		into       any
		want       []yamlkeys.Unknown
	}{
		{"known keys only", "model: a\nagent: {max_steps: 3}\n", &strict{}, nil},
		{"a typo, with the key meant", "model: a\nagent:\n  max_stepz: 3\n", &strict{},
			[]yamlkeys.Unknown{{Path: "agent.max_stepz", Line: 3, Suggest: "agent.max_steps"}}},
		{"a swap of neighbours", "mdoel: a\n", &strict{}, []yamlkeys.Unknown{{Path: "mdoel", Line: 1, Suggest: "model"}}},
		{"a key at the wrong level", "max_steps: 3\n", &strict{}, []yamlkeys.Unknown{{Path: "max_steps", Line: 1, Suggest: "agent.max_steps"}}},
		{"nothing near", "colour: red\n", &strict{}, []yamlkeys.Unknown{{Path: "colour", Line: 1}}},
		{"several, in order", "a: 1\nagent: {b: 2}\n", &strict{},
			[]yamlkeys.Unknown{{Path: "a", Line: 1}, {Path: "agent.b", Line: 2}}},
		{"lists, maps, patterns and inline structs", "agent:\n  edits:\n    - {after: x, name: y}\n    - {aftr: x, parms: {}}\nmodels:\n  'ollama:*': {fallbackz: [b]}\n", &doc{},
			[]yamlkeys.Unknown{{Path: "agent.edits[1].aftr", Line: 4, Suggest: "agent.edits[1].after"},
				{Path: "agent.edits[1].parms", Line: 4, Suggest: "agent.edits[1].params"},
				{Path: "models.'ollama:*'.fallbackz", Line: 6, Suggest: "models.'ollama:*'.fallbacks"}}},
		{"an inline map takes any key; a type that decodes itself judges its own", "whatever: 1\nagent: {timeout: {any: thing}}\n", &doc{}, nil},
		{"default names and pointers", "plain: {deep: {leaf: 1, leef: 2}}\n", &doc{},
			[]yamlkeys.Unknown{{Path: "plain.deep.leef", Line: 1, Suggest: "plain.deep.leaf"}}},
		{"anchors and merge keys", "base: &b {max_stepz: 1}\nagent:\n  <<: *b\n", &strict{},
			[]yamlkeys.Unknown{{Path: "base", Line: 1}, {Path: "agent.max_stepz", Line: 1, Suggest: "agent.max_steps"}}},
		{"an empty document", "", &strict{}, nil},
	} {
		got, err := yamlkeys.Find([]byte(tc.yaml), tc.into)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: found %+v, want %+v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: [%d] = %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := yamlkeys.Find([]byte("model: [1, 2\n"), &strict{}); err == nil {
		t.Error("a document that does not parse gave no error")
	}
}

func TestDescribe(t *testing.T) {
	u := yamlkeys.Unknown{Path: "agent.max_stepz", Line: 4, Suggest: "agent.max_steps"}
	if got, want := u.Describe("saucer.yaml"), `unknown key "agent.max_stepz" in saucer.yaml line 4; did you mean "agent.max_steps"?`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := (yamlkeys.Unknown{Path: "x", Line: 2}).Describe(""), `unknown key "x" at line 2`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

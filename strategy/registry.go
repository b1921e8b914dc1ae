package strategy

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Factory builds a strategy from its configured parameters.
type Factory func(params map[string]any) (Strategy, error)

// Spec names a strategy in a config file.
type Spec struct {
	Name string `yaml:"name" json:"name"`
	// FailFast stops the step when the strategy fails; nil means true.
	FailFast *bool          `yaml:"fail_fast,omitempty" json:"fail_fast,omitempty"`
	Params   map[string]any `yaml:"params,omitempty" json:"params,omitempty"`
}

// Registry maps strategy names to factories. Safe for concurrent use.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// Names of the built-in strategies.
const (
	Discover = "discover"
	Observe  = "observe"
	Ask      = "ask"
	Execute  = "execute"
	Remember = "remember"
)

// DefaultPipeline is what an agent runs when its config names no strategies.
func DefaultPipeline() []Spec {
	return []Spec{{Name: Discover}, {Name: Ask}, {Name: Execute}, {Name: Remember}}
}

// NewRegistry returns a registry holding the built-in strategies. Users
// register their own on it before building agents.
func NewRegistry() *Registry {
	r := &Registry{factories: map[string]Factory{}}
	r.mustRegister(Discover, func(map[string]any) (Strategy, error) { return discoverStrategy{}, nil })
	r.mustRegister(Observe, newObserve)
	r.mustRegister(DesktopObserve, newDesktopObserve)
	r.mustRegister(Ask, func(map[string]any) (Strategy, error) { return askStrategy{}, nil })
	r.mustRegister(Execute, func(map[string]any) (Strategy, error) { return executeStrategy{}, nil })
	r.mustRegister(Remember, func(map[string]any) (Strategy, error) { return rememberStrategy{}, nil })
	return r
}

func (r *Registry) mustRegister(name string, f Factory) {
	if err := r.Register(name, f); err != nil {
		panic(err)
	}
}

// Register adds a factory. A name can be registered once.
func (r *Registry) Register(name string, f Factory) error {
	if name == "" || f == nil {
		return fmt.Errorf("strategy: register needs a name and a factory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("strategy: %q is already registered", name)
	}
	r.factories[name] = f
	return nil
}

// Names lists the registered strategies, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Build turns specs into processor entries.
func (r *Registry) Build(specs []Spec) ([]Entry, error) {
	entries := make([]Entry, 0, len(specs))
	for i, s := range specs {
		r.mu.RLock()
		f, ok := r.factories[s.Name]
		r.mu.RUnlock()
		if !ok {
			return nil, fmt.Errorf("strategy #%d: unknown strategy %q (registered: %s)", i+1, s.Name, strings.Join(r.Names(), ", "))
		}
		st, err := f(s.Params)
		if err != nil {
			return nil, fmt.Errorf("strategy %q: %w", s.Name, err)
		}
		failFast := true
		if s.FailFast != nil {
			failFast = *s.FailFast
		}
		entries = append(entries, Entry{Strategy: st, FailFast: failFast})
	}
	return entries, nil
}

package server

import (
	"slices"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/session"
)

// Sessions is the usual Options.NewSession: each task's agents are built
// from cfg through the one assembly (package session), over base — a
// strategy registry, middleware, prompts — with the task's dispatcher and
// observer. Unless base names a model, each task opens its own from the
// config (a scripted model keeps its place in the script per task).
func Sessions(cfg *config.Config, base session.Options) func(SessionSpec) (Runner, error) {
	return func(spec SessionSpec) (Runner, error) {
		o := base
		o.Device, o.Dispatcher, o.Apps, o.DeviceInfo = nil, spec.Dispatcher, spec.AppDescriptions, spec.Device
		o.Observers = append(slices.Clip(base.Observers), spec.Observer)
		if o.Asker == nil && spec.Person != nil {
			o.Asker = spec.Person
		}
		if o.Confirmer == nil && spec.Person != nil {
			o.Confirmer = spec.Person
		}
		return session.New(cfg, o)
	}
}

var _ Runner = (*agent.Session)(nil)

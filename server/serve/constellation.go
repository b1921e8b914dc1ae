package serve

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/constellation"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/store"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

// constellations is the orchestrator a server runs constellations with:
// nodes as tasks on its devices (and those of the AIP servers the config
// names), graphs in its store, the config's model as the constellation
// agent, recordings under runs/constellations when record.enabled.
func constellations(cfg *config.Config, srv *server.Server, st store.Store, runs string, logf func(string, ...any)) (*constellation.Orchestrator, error) {
	model, err := session.OpenModel(cfg)
	if err != nil {
		return nil, err
	}
	set, err := session.Prompts(cfg.Prompts)
	if err != nil {
		return nil, err
	}
	k := cfg.Constellation
	devices, err := constellationDevices(k, srv, logf)
	if err != nil {
		return nil, err
	}
	bounds := constellation.Bounds{MaxNodes: k.MaxNodes, MaxEdits: k.MaxEdits}
	opts := constellation.Options{Devices: devices, Store: constellation.NewServerStore(st),
		MaxConcurrent: k.MaxConcurrent, PerDevice: k.PerDevice, Allowed: k.Devices, ReviewBeforeStart: k.ReviewBeforeStart,
		Bounds: bounds, DeviceWait: k.DeviceWait.D(),
		NewPlanner: func(*constellation.Graph) (constellation.Stepper, error) {
			return constellation.NewPlanner(constellation.PlannerOptions{Model: model, Prompts: set, MaxSteps: k.MaxPlannerSteps, Bounds: bounds,
				Limits: strategy.Limits{MaxRetries: cfg.Agent.MaxRetries, RetryBackoff: cfg.Agent.RetryBackoff.D(), MaxRetryAfter: cfg.Agent.MaxRetryAfter.D()}})
		},
		OnEvent: func(e constellation.Event) {
			if e.Kind == "end" {
				logf("constellation %s %s", e.Constellation, e.Status)
			}
		}}
	if cfg.Record.Enabled {
		opts.Record = constellation.RecordTo(filepath.Join(runs, "constellations"))
	}
	return constellation.New(opts)
}

// constellationDevices are where nodes run: this server's devices, then
// those of the AIP servers the config names, reached as a constellation
// client.
func constellationDevices(k config.Constellation, srv *server.Server, logf func(string, ...any)) (constellation.Devices, error) {
	places := []constellation.Devices{constellation.ServerDevices{Server: srv}}
	for i, sv := range k.Servers {
		token := sv.Token
		if sv.TokenEnv != "" {
			if token = os.Getenv(sv.TokenEnv); token == "" {
				return nil, fmt.Errorf("constellation.servers[%d]: %s is not set: export the server's API key in it", i, sv.TokenEnv)
			}
		}
		var ds []constellation.Device
		for _, d := range sv.Devices {
			ds = append(ds, constellation.Device{ID: d.ID, Apps: d.Apps, Platform: d.Platform, Sandbox: d.Sandbox, Labels: d.Labels})
		}
		far, err := constellation.NewAIPDevices(constellation.AIPOptions{URL: sv.URL, Token: token, Name: sv.Name, Devices: ds, Logf: logf})
		if err != nil {
			return nil, fmt.Errorf("constellation.servers[%d]: %w", i, err)
		}
		places = append(places, far)
	}
	if len(places) == 1 {
		return places[0], nil
	}
	return constellation.Join(places...), nil
}

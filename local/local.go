// Package local assembles local mode from a config: Saucer's own MCP tool
// servers in-process, a device client over them, a local dispatcher, and a
// session of agents driven by the configured model.
package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/tools/files"
	"github.com/saucerhq/saucer/tools/shell"
)

// Device starts the configured tool servers in-process and connects a device
// client to them. workdir is where the shell runs and the default file root.
func Device(ctx context.Context, cfg *config.Config, workdir string) (*client.Client, error) {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(workdir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("working directory %q is not a directory", workdir)
	}
	var servers []client.Server
	if sh := cfg.Tools.Shell; sh.Enabled {
		servers = append(servers, client.Server{Namespace: "shell", Description: sh.Description,
			MCP: shell.New(shell.Options{Dir: workdir, Timeout: sh.Timeout.D(), MaxOutput: sh.MaxOutput})})
	}
	if fc := cfg.Tools.Files; fc.Enabled {
		roots := fc.Roots
		if len(roots) == 0 {
			roots = []string{workdir}
		}
		for i, r := range roots {
			if !filepath.IsAbs(r) {
				roots[i] = filepath.Join(workdir, r)
			}
		}
		srv, err := files.New(files.Options{Roots: roots})
		if err != nil {
			return nil, fmt.Errorf("files tool: %w", err)
		}
		servers = append(servers, client.Server{Namespace: "files", Description: fc.Description, MCP: srv})
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no tools are enabled: enable tools.shell or tools.files in the config")
	}
	return client.New(ctx, servers, client.Options{})
}

// Options are what a run adds to the config.
type Options struct {
	// Model overrides the config's model, when set.
	Model llm.Model
	// Registry supplies strategies; nil means the built-ins.
	Registry  *strategy.Registry
	Confirmer strategy.Confirmer
	Asker     agent.Asker
	Observer  func(agent.Event)
	OnChunk   func(agent string, c llm.Chunk)
}

// OpenModel opens the config's model.
func OpenModel(cfg *config.Config) (llm.Model, error) {
	return provider.Open(cfg.Model, cfg.Providers, os.Getenv)
}

// Session builds a session over dev from the config.
func Session(cfg *config.Config, dev *client.Client, o Options) (*agent.Session, error) {
	model := o.Model
	if model == nil {
		var err error
		if model, err = OpenModel(cfg); err != nil {
			return nil, err
		}
	}
	set, err := prompts.Load(cfg.Prompts)
	if err != nil {
		return nil, err
	}
	a := cfg.Agent
	descs := map[string]string{}
	for _, ns := range dev.Namespaces() {
		descs[ns.Name] = ns.Description
	}
	return agent.New(agent.Options{
		Model:        model,
		Mode:         cfg.ModeFor(cfg.Model),
		Dispatcher:   dispatcher.NewLocal(dev, dispatcher.LocalOptions{Timeout: a.CommandTimeout.D()}),
		Prompts:      set,
		Registry:     o.Registry,
		HostPipeline: a.HostStrategies,
		AppPipeline:  a.AppStrategies,
		MaxRounds:    a.MaxRounds,
		MaxSteps:     a.MaxSteps,
		Limits: strategy.Limits{MaxRetries: retries(a.MaxRetries), RetryBackoff: a.RetryBackoff.D(),
			MaxResultChars: a.MaxResultChars, ConfirmDestructive: a.ConfirmDestructive},
		Confirmer:       o.Confirmer,
		Asker:           o.Asker,
		AppDescriptions: descs,
		Observer:        o.Observer,
		OnChunk:         o.OnChunk,
	})
}

// retries maps the config's count (0 = none) to agent.Options' (0 = default).
func retries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// Command saucer runs LLM-driven device agents: `saucer run "task"`.
package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/config"
)

// exitError carries a process exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func main() {
	hideSecrets()
	root := newRoot()
	if err := root.Execute(); err != nil {
		var ee exitError
		if errors.As(err, &ee) {
			os.Exit(ee.code)
		}
		fmt.Fprintln(os.Stderr, "saucer:", err)
		os.Exit(2)
	}
}

type globalFlags struct {
	config  string
	model   string
	mode    string
	prompts string
}

func newRoot() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "saucer",
		Short:         "LLM-driven device agents: a host agent plans, app agents act through MCP tools",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVarP(&g.config, "config", "c", "", "YAML config file (default: built-in defaults)")
	root.PersistentFlags().StringVarP(&g.model, "model", "m", "", "model as PROVIDER:MODEL, e.g. openai:gpt-4o, ollama:qwen2.5, scripted:FILE.yaml")
	root.PersistentFlags().StringVar(&g.mode, "mode", "", "how the model acts: tools (native tool calls) or json")
	root.PersistentFlags().StringVar(&g.prompts, "prompts", "", "directory of *.tmpl files overriding the built-in prompts")
	// An empty value given on purpose (--model "", or $UNSET_VAR) would
	// quietly mean the config's model: say so instead.
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		for _, fl := range []struct{ name, give string }{
			{"model", "a model as PROVIDER:MODEL (e.g. openai:gpt-4o), or leave the flag out to use the config's model (model: in the config file, or SAUCER_MODEL)"},
			{"mode", "tools or json, or leave the flag out to use the config's mode (mode: in the config file, or SAUCER_MODE)"},
		} {
			if f := cmd.Flags().Lookup(fl.name); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
				return fmt.Errorf("--%s is empty: give %s", fl.name, fl.give)
			}
		}
		return nil
	}
	root.AddCommand(newRunCmd(g), newToolsCmd(g), newFSMCmd(), newConfigCmd(g))
	for _, newCmd := range commands {
		root.AddCommand(newCmd(g))
	}
	return root
}

// commands are the subcommands that files of this package add for
// themselves, in an init function, so that adding a command touches no other
// file.
var commands []func(*globalFlags) *cobra.Command

// load reads the config and applies the global flags over it.
func (g *globalFlags) load() (*config.Config, error) {
	cfg, err := config.Load(g.config, os.Getenv)
	if err != nil {
		return nil, err
	}
	if g.model != "" {
		cfg.Model = g.model
	}
	if g.mode != "" {
		cfg.Mode = g.mode
		cfg.Models = nil
	}
	if g.prompts != "" {
		cfg.Prompts = g.prompts
	}
	return cfg, cfg.Validate()
}

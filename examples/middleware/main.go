// Command middleware wraps every strategy run in two middlewares — one
// times them, one vetoes shell commands that delete files — and gives the
// shell app a pipeline of its own (an observation of the folder before
// each step), set in the config without restating the pipeline.
//
//	go run ./examples/middleware
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

//go:embed script.yaml
var script []byte

// The shell app's own pipeline: the app pipeline with an observation of
// the folder after discovery.
const configYAML = `
agent:
  app_pipelines:
    shell:
      edits:
        - after: discover
          name: observe
          params: {commands: [{tool: execute_command, namespace: shell, arguments: {command: "ls"}}]}
`

// timer counts and times every strategy run, by agent and strategy.
type timer struct {
	runs  map[string]int
	spent time.Duration
}

func (t *timer) middleware(next strategy.Handler) strategy.Handler {
	return func(ctx context.Context, pc *strategy.Context) error {
		start := time.Now()
		err := next(ctx, pc)
		t.spent += time.Since(start)
		t.runs[pc.Agent().Name+" "+pc.Running()]++
		return err
	}
}

// noDeletes vetoes the execute strategy when the model asks the shell to
// delete: returning an error instead of calling next stops the step, and
// the error, naming the strategy, ends the app agent's subtask.
func noDeletes(next strategy.Handler) strategy.Handler {
	return func(ctx context.Context, pc *strategy.Context) error {
		if d := pc.Decision(); pc.Running() == strategy.Execute && pc.Agent().App == "shell" && d != nil {
			for _, a := range d.Actions {
				if cmd, _ := a.Arguments["command"].(string); strings.HasPrefix(cmd, "rm ") {
					return errors.New("vetoed: this program's shell may not delete files")
				}
			}
		}
		return next(ctx, pc)
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "middleware:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	workdir, err := os.MkdirTemp("", "saucer-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workdir)
	if err := os.WriteFile(filepath.Join(workdir, "a.txt"), []byte("keep me\n"), 0o644); err != nil {
		return err
	}
	cfg, err := config.FromYAML([]byte(configYAML))
	if err != nil {
		return err
	}
	dev, err := local.Device(ctx, cfg, workdir)
	if err != nil {
		return err
	}
	defer dev.Close()
	s, err := scripted.Parse(script, "yaml")
	if err != nil {
		return err
	}
	t := &timer{runs: map[string]int{}}
	sess, err := session.New(cfg, session.Options{Device: dev, Model: scripted.New(*s),
		Middleware: []strategy.Middleware{t.middleware, noDeletes}})
	if err != nil {
		return err
	}
	out := sess.Run(ctx, "Delete a.txt")
	_, statErr := os.Stat(filepath.Join(workdir, "a.txt"))
	fmt.Printf("status: %s\nanswer: %s\na.txt still there: %t\n", out.Status, out.Answer, statErr == nil)
	fmt.Println("strategy runs by agent:")
	for _, k := range slices.Sorted(maps.Keys(t.runs)) {
		fmt.Printf("  %-24s %d\n", k, t.runs[k])
	}
	return nil
}

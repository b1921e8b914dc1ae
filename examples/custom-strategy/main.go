// Command custom-strategy adds a strategy of its own to the app agents'
// data collection without restating the pipeline: "clock" tells the model
// the device's time, right after the built-in "discover".
//
//	go run ./examples/custom-strategy
package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/strategy"
)

// script plays the model's part, so that the example needs no API key; its
// `expect` lines check what the model was shown.
//
//go:embed script.yaml
var script []byte

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "custom-strategy:", err)
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

	// The strategy: a name, a phase, and what it does in a step.
	reg := strategy.NewRegistry()
	err = reg.Register("clock", func(map[string]any) (strategy.Strategy, error) {
		return strategy.Func("clock", strategy.DataCollection, func(ctx context.Context, pc *strategy.Context) error {
			now := time.Now().UTC().Format("2006-01-02 15:04 UTC")
			pc.Observe(prompts.Observation{Name: "clock", Content: "The device's clock reads " + now})
			return nil
		}), nil
	})
	if err != nil {
		return err
	}

	cfg := config.Default()
	dev, err := local.Device(ctx, cfg, workdir)
	if err != nil {
		return err
	}
	defer dev.Close()
	s, err := scripted.Parse(script, "yaml")
	if err != nil {
		return err
	}
	sess, err := session.New(cfg, session.Options{
		Device:   dev,
		Model:    scripted.New(*s),
		Registry: reg,
		// The config's pipeline (or the default one), with clock after discover.
		AppEdits: []strategy.Edit{strategy.Insert(strategy.Spec{Name: "clock"}, strategy.Discover, true)},
	})
	if err != nil {
		return err
	}
	out := sess.Run(ctx, "Write the device's time to time.txt")
	b, _ := os.ReadFile(filepath.Join(workdir, "time.txt"))
	fmt.Printf("status: %s\nanswer: %s\ntime.txt: %q\n", out.Status, out.Answer, b)
	return nil
}

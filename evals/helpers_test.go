package evals_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// recordRun runs task for real, as a session of cfg (and opts) on a local
// device working in work, and records it; it returns
// the recording's directory and how the run ended.
func recordRun(t testing.TB, cfg *config.Config, work, task string, opts session.Options) (string, *agent.Outcome) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dev, err := local.Device(ctx, cfg, work)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	y, _ := cfg.YAML()
	apps := map[string]string{}
	for _, ns := range dev.Namespaces() {
		apps[ns.Name] = ns.Description
	}
	device := dev.Device()
	dir := filepath.Join(t.TempDir(), "run")
	rec, err := record.Start(dir, trajectory.Session{Task: task, Model: cfg.Model, Mode: "tools", Config: string(y), Device: &device, Apps: apps}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Device = dev
	opts.Observers = append(opts.Observers, rec.Observe)
	sess, err := session.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	out := sess.Run(ctx, task)
	if err := rec.Finish(out); err != nil {
		t.Fatal(err)
	}
	return dir, out
}

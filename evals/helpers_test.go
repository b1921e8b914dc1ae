package evals_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// helloRecording is the demo's recording (suites/recordings/hello) as an
// absolute path, as a suite in another folder names it.
func helloRecording(t testing.TB) string {
	t.Helper()
	rec, err := filepath.Abs("suites/recordings/hello")
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// writeReplaySuite writes dir/suite.yaml: a suite named name, on the
// replay model, of n cases c0, c1, ... that each replay the demo's
// recording; rest(i) is the rest of case i (its task, limits and checks,
// as YAML lines indented four spaces). It returns the file's path.
func writeReplaySuite(t testing.TB, dir, name string, n int, rest func(i int) string) string {
	t.Helper()
	rec := helloRecording(t)
	var s strings.Builder
	fmt.Fprintf(&s, "name: %s\nmodel: replay\ncases:\n", name)
	for i := range n {
		fmt.Fprintf(&s, "  - id: c%d\n    device: {recording: %q}\n%s", i, rec, rest(i))
	}
	file := filepath.Join(dir, "suite.yaml")
	if err := os.WriteFile(file, []byte(s.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// scriptSpec writes a scripted model's script as dir/name.yaml and returns
// the model spec that names it.
func scriptSpec(t testing.TB, dir, name, script string) string {
	t.Helper()
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + p
}

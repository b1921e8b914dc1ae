package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/record"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/trajectory"
)

// runLocal runs task in a session for cfg on a local device working in
// dir, with opts (its Device is set here), and closes the device when the
// run has ended. The run gets a minute.
func runLocal(t testing.TB, cfg *config.Config, dir string, opts session.Options, task string) *agent.Outcome {
	t.Helper()
	dev, err := local.Device(context.Background(), cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	opts.Device = dev
	sess, err := session.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return sess.Run(ctx, task)
}

// keepTask is the task of the fault tests: its folder holds keep/tmp,
// which the task removes, and keep/precious.txt, which a cut `rm -rf
// keep` would remove too.
const keepTask = "remove keep/tmp"

// keepRun is how a recorded run of keepTask went.
type keepRun struct {
	out    *agent.Outcome
	ran    []string      // the shell commands dispatched, in order
	events []agent.Event // every event the session told
	tr     *trajectory.Trajectory
	kept   error // nil when keep/precious.txt is as it was
}

// runKeepTask runs keepTask in mode, recorded, on a local device in a
// fresh folder, with opts (their Observers are kept, the recorder's and
// runKeepTask's own added).
func runKeepTask(t *testing.T, cfg *config.Config, mode string, opts session.Options) keepRun {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "keep", "tmp"), 0o755)
	os.WriteFile(filepath.Join(dir, "keep", "precious.txt"), []byte("keep me\n"), 0o644)
	rec, err := record.Start(filepath.Join(t.TempDir(), "rec"), trajectory.Session{Task: keepTask, Model: cfg.Model, Mode: mode}, trajectory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu sync.Mutex
		r  keepRun
	)
	opts.Observers = append(opts.Observers[:len(opts.Observers):len(opts.Observers)], rec.Observe, func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		r.events = append(r.events, e)
		if e.Kind == agent.EventDispatch {
			for _, c := range e.Commands {
				if c.ToolName == "execute_command" {
					r.ran = append(r.ran, fmt.Sprint(c.Parameters["command"]))
				}
			}
		}
	})
	r.out = runLocal(t, cfg, dir, opts, keepTask)
	if err := rec.Finish(r.out); err != nil {
		t.Fatal(err)
	}
	if r.tr, err = trajectory.Read(rec.Dir()); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keep", "precious.txt")); err != nil || string(b) != "keep me\n" {
		r.kept = fmt.Errorf("keep/precious.txt: %q %v", b, err)
	}
	mu.Lock() // what the observer wrote, taken whole
	defer mu.Unlock()
	return r
}

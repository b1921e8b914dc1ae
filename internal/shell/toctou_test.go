package shell

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A symlink swapped between confine_cwd's check and the command's start
// must not move the command out of the working directory: the command
// starts in the directory that was checked.
func TestConfineCwdHoldsTheCheckedDirectory(t *testing.T) {
	base := t.TempDir()
	outside := t.TempDir()
	inside := filepath.Join(base, "inside")
	os.Mkdir(inside, 0o755)
	link := filepath.Join(base, "link")
	os.Symlink(inside, link)
	pol, err := compilePolicy(Policy{ConfineCwd: true})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: Options{Dir: base, Logger: slog.New(slog.DiscardHandler)}.withDefaults(), policy: pol}

	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(base, "link.tmp")
		for i := 0; !stop.Load(); i++ {
			target := inside
			if i%2 == 1 {
				target = outside
			}
			os.Remove(tmp)
			os.Symlink(target, tmp)
			os.Rename(tmp, link) // atomic swap
		}
	}()
	ran, refused := 0, 0
	deadline := time.Now().Add(3 * time.Second)
	for i := 0; i < 1500 && time.Now().Before(deadline); i++ {
		out, err := r.execute(context.Background(), ExecuteInput{Command: "pwd -P", Cwd: "link"})
		if err != nil {
			if refused++; refused == 1 {
				t.Log(err)
			}
			continue
		}
		ran++
		if got := strings.TrimSpace(out.Stdout); got != inside {
			real, _ := filepath.EvalSymlinks(inside)
			if got != real {
				t.Fatalf("a command ran in %s, outside the working directory %s", got, base)
			}
		}
	}
	stop.Store(true)
	<-done
	t.Logf("ran %d, refused %d", ran, refused)
	if ran == 0 || refused == 0 {
		t.Logf("ran %d, refused %d: the swap did not race the check both ways", ran, refused)
	}
}

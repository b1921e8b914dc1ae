package proctag

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// A tagged process that left its parent's process group (setsid, as a
// daemon does) is found by its tag and killed; one with another tag is
// left alone.
func TestKillFindsWhatLeftTheGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("proctag reads /proc")
	}
	tag := "t" + strconv.Itoa(os.Getpid())
	start := func(value string) int {
		// The shell prints the daemon's PID and ends; the daemon, in a
		// session of its own, sleeps on.
		cmd := exec.Command("sh", "-c", `setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!`)
		cmd.Env = append(os.Environ(), "PROCTAG_TEST="+value)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(string(out[:len(out)-1]))
		if err != nil || pid <= 1 {
			t.Fatalf("the shell printed %q, not a PID", out)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		// The shell can end while its child is still between setsid and
		// sleep: a process in the middle of exec shows no environment
		// (a fresh machine's CI saw one missing). Its tag is looked for
		// once it runs sleep.
		for deadline := time.Now().Add(5 * time.Second); Command(pid) != "sleep 600"; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d runs %q, not sleep 600", pid, Command(pid))
			}
		}
		return pid
	}
	mine, other := start(tag), start(tag+"-other")
	seen := map[int]string{}
	Each("PROCTAG_TEST", func(pid int, v string) { seen[pid] = v })
	if seen[mine] != tag || seen[other] != tag+"-other" {
		t.Fatalf("Each saw %v; want %d=%s and %d=%s-other", seen, mine, tag, other, tag)
	}
	if c := Command(mine); c != "sleep 600" {
		t.Errorf("Command(%d) = %q, want \"sleep 600\"", mine, c)
	}
	Kill("PROCTAG_TEST", tag, 2*time.Second)
	// The daemon's parent is init (or a subreaper), which reaps it: it is
	// gone or a zombie once the signal is delivered.
	deadline := time.Now().Add(5 * time.Second)
	for !Zombie(mine) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running after Kill", mine)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if Zombie(other) {
		t.Fatalf("process %d, of another tag, was killed", other)
	}
}

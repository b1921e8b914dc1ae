package sandbox

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process inside is found on the host by the id it has inside: the
// host's process that runs what was started, not the host process that
// happens to have that id.
func TestHostPID(t *testing.T) {
	s := need(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := s.Command(ctx, "", nil, "/bin/sh", "-c", "echo $$; exec sleep 60")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	inside, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || inside <= 0 {
		t.Fatalf("the shell inside said its id is %q", line)
	}
	host := s.HostPID(inside)
	if host <= 0 {
		t.Fatalf("HostPID(%d) = %d", inside, host)
	}
	if host == inside {
		t.Fatalf("the host's id %d is the id inside: the sandbox has no PID namespace of its own", host)
	}
	if again := s.HostPID(inside); again != host {
		t.Fatalf("HostPID(%d) = %d, then %d", inside, host, again)
	}
	// An id no process inside has maps to none, even where a host
	// process has it (this test's own).
	if got := s.HostPID(os.Getpid()); got != 0 && got != host {
		t.Fatalf("HostPID(%d), this test's own id, = %d: a host process was taken for one inside", os.Getpid(), got)
	}
	if got := s.HostPID(0); got != 0 {
		t.Fatalf("HostPID(0) = %d", got)
	}
	// The host's id names the process started: a signal to it ends what
	// runs inside (the shell, or the sleep it became).
	if err := syscall.Kill(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the command inside ended well after its host id was killed")
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("killing host process %d did not end the process %d inside", host, inside)
	}
}

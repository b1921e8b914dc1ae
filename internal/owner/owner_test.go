package owner

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// This process is alive under its own tag; a process that has exited is
// not, nor is one whose PID matches but whose start time does not; a
// name that is no tag names no owner.
func TestAlive(t *testing.T) {
	if alive, ok := Alive(Tag()); !alive || !ok {
		t.Fatalf("Alive(%q) = %v, %v for this very process", Tag(), alive, ok)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1) to run:", err)
	}
	gone := strconv.Itoa(cmd.Process.Pid) + ".1"
	if alive, ok := Alive(gone); alive || !ok {
		t.Errorf("Alive(%q) = %v, %v for a process that has exited", gone, alive, ok)
	}
	other := strconv.Itoa(os.Getpid()) + "." + strconv.FormatUint(StartTime(os.Getpid())+1, 10)
	if alive, ok := Alive(other); alive || !ok {
		t.Errorf("Alive(%q) = %v, %v: this PID with another start time is another process", other, alive, ok)
	}
	for _, bad := range []string{"", "abc", "12", "x.5", "0.5", "12.x"} {
		if _, ok := Alive(bad); ok {
			t.Errorf("Alive(%q) took it for an owner tag", bad)
		}
	}
}

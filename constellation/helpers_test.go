package constellation

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/local"
)

// readRecordingFile reads the constellation recording at path (a
// RecordTo directory's ID.jsonl, or a trial's trajectory).
func readRecordingFile(t testing.TB, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := ReadRecording(f)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// runRecorded runs request on f's devices with planner, recording it,
// and fails t unless the constellation completes; it returns the graph
// and its recording.
func runRecorded(t testing.TB, f *fakeDevices, planner func(*Graph) (Stepper, error), request string) (*Graph, []Event) {
	t.Helper()
	dir := t.TempDir()
	o, err := New(Options{Devices: f, NewPlanner: planner, Record: RecordTo(dir)})
	if err != nil {
		t.Fatal(err)
	}
	g, err := o.Run(context.Background(), request)
	if err != nil || g.Status != Completed {
		t.Fatalf("%v %s: %s", err, g.Status, g.Summary())
	}
	return g, readRecordingFile(t, filepath.Join(dir, g.ID+".jsonl"))
}

// losing is an outcome for f under which every task on device ends with
// the device lost (and gone from f's list, as a disconnected device is),
// and a task on any other device completes with ok+device as its result.
func (f *fakeDevices) losing(device, why, ok string) func(device, task string, try int) TaskOutcome {
	return func(d, _ string, _ int) TaskOutcome {
		if d == device {
			f.remove(device)
			return TaskOutcome{DeviceLost: true, Error: why}
		}
		return TaskOutcome{OK: true, Result: ok + d}
	}
}

// runDevice attaches dev to the server at httpURL as device id (as
// `saucer client` does) and returns once the device has registered. stop,
// or the test's end, ends the connection and closes dev.
func runDevice(t testing.TB, httpURL, id string, dev *client.Client) (stop func()) {
	t.Helper()
	stop, err := local.Attach(context.Background(), dev, "ws"+strings.TrimPrefix(httpURL, "http")+"/ws", suiteToken, id,
		local.AttachOptions{MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, RegisterTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	t.Cleanup(stop)
	return stop
}

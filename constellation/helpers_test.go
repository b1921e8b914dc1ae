package constellation

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/internal/remote"
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

// runDevice runs dev as device id's client (as `saucer client` does)
// against the server at httpURL, and returns once the device has
// registered. stop, or the test's end, stops the client and closes dev.
func runDevice(t testing.TB, httpURL, id string, dev *client.Client) (stop func()) {
	t.Helper()
	rc, err := remote.New(dev, remote.Options{URL: "ws" + strings.TrimPrefix(httpURL, "http") + "/ws", Token: suiteToken, ClientID: id,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, RegisterTimeout: 2 * time.Second, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rc.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			dev.Close()
		})
	}
	t.Cleanup(stop)
	select {
	case <-rc.Connected():
	case <-done:
		t.Fatalf("%s stopped before it registered", id)
	case <-time.After(time.Minute): // a safety net: a cold, busy machine is slow
		t.Fatalf("%s did not register", id)
	}
	return stop
}

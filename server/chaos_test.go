package server_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
)

// cutter hands out connections and can cut the newest one.
type cutter struct {
	mu     sync.Mutex
	conn   net.Conn
	dialed chan struct{} // told of each new connection
}

func newCutter() *cutter { return &cutter{dialed: make(chan struct{}, 1)} }

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		c.mu.Lock()
		c.conn = conn
		c.mu.Unlock()
		select {
		case c.dialed <- struct{}{}:
		default: // one is pending
		}
	}
	return conn, err
}

// waitDialed waits until a connection (a new one, after a cut) exists.
func (c *cutter) waitDialed(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ok := c.conn != nil
		c.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-c.dialed:
		case <-deadline.C:
			t.Fatal("the device did not reconnect")
		}
	}
}

func (c *cutter) cut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return false
	}
	c.conn.Close()
	c.conn = nil
	return true
}

// countingDevice counts runs per call id, taking a little random time.
type countingDevice struct {
	mu   sync.Mutex
	runs map[string]int
}

func (d *countingDevice) Execute(ctx context.Context, cmd command.Command) command.Result {
	time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	d.mu.Lock()
	d.runs[cmd.CallID]++
	d.mu.Unlock()
	return command.Succeeded(cmd.CallID, cmd.CallID)
}

func (d *countingDevice) Device() command.DeviceInfo { return command.DeviceInfo{Platform: "linux"} }

// TestChaos cuts the device's connection 20 times in a row at random points
// (mid-command, with frames in flight either way) while a task streams
// rounds of commands. Every command runs exactly once on the device and
// every result reaches the agents.
func TestChaos(t *testing.T) {
	const cuts = 20
	var done atomic.Bool
	type outcome struct {
		sent, ok int
		bad      []string
	}
	results := make(chan outcome, 1)
	session := func(spec server.SessionSpec) (server.Runner, error) {
		return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
			var o outcome
			for i := 0; !done.Load() || i < 5; i++ {
				cmds := make([]command.Command, 3)
				for j := range cmds {
					cmds[j] = command.Command{ToolName: "count", ToolType: command.Action, CallID: fmt.Sprintf("r%d-c%d", i, j)}
				}
				o.sent += len(cmds)
				for j, r := range spec.Dispatcher.Execute(ctx, cmds) {
					if r.OK() && string(r.Result) == `"`+cmds[j].CallID+`"` {
						o.ok++
					} else {
						o.bad = append(o.bad, fmt.Sprintf("%s: %s %s", cmds[j].CallID, r.Status, r.Error))
					}
				}
			}
			results <- o
			return &agent.Outcome{Status: fsm.Finish}
		}), nil
	}
	f := newFixture(t, server.Options{NewSession: session, AwayTimeout: 20 * time.Second})
	dev := &countingDevice{runs: map[string]int{}}
	cut := newCutter()
	c := connect(t, f.wsURL, "dev", dev, func(o *remote.Options) {
		o.HTTPClient = &http.Client{Transport: &http.Transport{DialContext: cut.dial}}
		o.Logf = func(string, ...any) {} // 20 reconnections are expected
	})
	if _, code := dispatch(t, f, "dev", "stream"); code != 200 {
		t.Fatalf("dispatch %d", code)
	}
	for i := 0; i < cuts; i++ {
		cut.waitDialed(t)
		select {
		case <-c.Connected():
		case <-time.After(10 * time.Second):
			t.Fatalf("the device did not come back after cut %d", i)
		}
		time.Sleep(time.Duration(rand.IntN(8000)) * time.Microsecond)
		if !cut.cut() {
			t.Fatalf("nothing to cut at cut %d", i+1)
		}
	}
	done.Store(true)
	var o outcome
	select {
	case o = <-results:
	case <-time.After(30 * time.Second):
		t.Fatal("the task did not finish after the cuts")
	}
	if len(o.bad) > 0 {
		t.Errorf("%d of %d results lost or wrong, e.g. %v", len(o.bad), o.sent, o.bad[:min(5, len(o.bad))])
	}
	dev.mu.Lock()
	defer dev.mu.Unlock()
	twice := 0
	for id, n := range dev.runs {
		if n != 1 {
			twice++
			t.Errorf("%s ran %d times", id, n)
		}
	}
	if len(dev.runs) != o.sent || o.ok != o.sent {
		t.Errorf("the device ran %d distinct commands, %d were sent, %d results ok", len(dev.runs), o.sent, o.ok)
	}
	t.Logf("%d cuts, %d commands, all ran once and reported", cuts, o.sent)
}

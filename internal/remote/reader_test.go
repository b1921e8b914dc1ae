package remote_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/tools"
)

// acceptRegistration accepts an AIP connection, reads its register frame
// and acknowledges it, as a server does; nil when the handshake or the
// registration failed. The caller closes the connection.
func acceptRegistration(w http.ResponseWriter, r *http.Request) *aip.Conn {
	conn, err := aip.Accept(w, r, aip.ConnOptions{})
	if err != nil {
		return nil
	}
	if _, b, err := conn.Read(r.Context()); err != nil || !strings.Contains(string(b), `"type":"register"`) {
		conn.CloseNow()
		return nil
	}
	conn.Send(r.Context(), &aip.ServerMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ResponseID: "ack"})
	return conn
}

// deviceLink runs a remote client for dev against a loopback AIP server
// and returns the server's side of the registered connection, and the
// client.
func deviceLink(t *testing.T, dev remote.Device) (*aip.Conn, *remote.Client) {
	t.Helper()
	conns := make(chan *aip.Conn, 1)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn := acceptRegistration(w, r)
		if conn == nil {
			return
		}
		defer conn.CloseNow()
		conns <- conn
		<-release
	}))
	c, err := remote.New(dev, remote.Options{URL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", ClientID: "box",
		HeartbeatInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		close(release)
		<-done
		hs.Close()
	})
	select {
	case conn := <-conns:
		return conn, c
	case <-time.After(30 * time.Second):
		t.Fatal("the client did not register")
		return nil, nil
	}
}

// round sends one command frame and returns the results frame that
// answers it (progress heartbeats are passed over).
func round(t *testing.T, conn *aip.Conn, id string, cmds ...command.Command) *aip.ClientMessage {
	t.Helper()
	send(t, conn, id, cmds...)
	return results(t, conn, id)
}

func send(t *testing.T, conn *aip.Conn, id string, cmds ...command.Command) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Send(ctx, &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, ResponseID: id,
		Timestamp: aip.Timestamp(time.Now()), Actions: cmds}); err != nil {
		t.Fatal(err)
	}
}

func results(t *testing.T, conn *aip.Conn, id string) *aip.ClientMessage {
	t.Helper()
	for {
		_, b, err := conn.Read(context.Background())
		if err != nil {
			t.Fatalf("waiting for the results of %s: %v", id, err)
		}
		m, err := aip.DecodeClient(b)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == aip.TypeCommandResults {
			if m.PrevResponseID != id {
				t.Fatalf("results for %s, want those of %s", m.PrevResponseID, id)
			}
			return m
		}
	}
}

// inlineEcho answers echo itself, in the caller's goroutine (the device
// client runs each tool call in a goroutine of its own, which would hide
// the reader's), and passes other commands to the device client.
type inlineEcho struct{ *client.Client }

func (d inlineEcho) Execute(ctx context.Context, cmd command.Command) command.Result {
	if cmd.ToolName == "echo" {
		return command.Succeeded(cmd.CallID, cmd.Parameters["text"])
	}
	return d.Client.Execute(ctx, cmd)
}

func goroutinesCreated() uint64 {
	s := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// A quick round is run by the goroutine that read its frame, which then
// reads on: no goroutine is started per round trip (each cost a thread's
// wake and sleep), and no timer is set per round (setting one that goes
// off before all others cost a wake of the runtime's poller or of an idle
// thread each round trip). A round that lasts hands reading over, so that
// a command_status about it is answered while it runs.
func TestReaderRunsQuickRoundsItself(t *testing.T) {
	hold, holding := make(chan struct{}), make(chan struct{})
	s := &tools.Server{Name: "box"}
	s.Add(
		tools.New("hold", "runs until released", tools.Annotations{Risk: tools.RiskRead},
			func(ctx context.Context, in struct{}) (string, error) {
				close(holding)
				select {
				case <-hold:
					return "released", nil
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}))
	dev, err := client.New(context.Background(), []client.Server{{Namespace: "box", MCP: s}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	conn, c := deviceLink(t, inlineEcho{dev})

	round(t, conn, "warm", command.Command{Namespace: "box", ToolName: "echo", Parameters: map[string]any{"text": "hi"}, CallID: "w"})
	const rounds = 50
	arms0, fires0 := remote.WatchCounts(c)
	before := goroutinesCreated()
	for i := range rounds {
		id := fmt.Sprint("r", i)
		res := round(t, conn, id, command.Command{Namespace: "box", ToolName: "echo", Parameters: map[string]any{"text": id}, CallID: id})
		if len(res.ActionResults) != 1 || string(res.ActionResults[0].Result) != fmt.Sprintf("%q", id) {
			t.Fatalf("round %s: %+v", id, res.ActionResults)
		}
	}
	n := goroutinesCreated() - before
	arms, fires := remote.WatchCounts(c)
	arms, fires = arms-arms0, fires-fires0
	// The watch's timer is set again only once it has gone off, so at
	// most once per successorAfter of the rounds' time: setting it for
	// each round set it 50 times and had it go off never.
	if arms > fires+1 {
		t.Errorf("the read watch's timer was set %d times and went off %d times in %d quick rounds: it is set for each round", arms, fires, rounds)
	}
	// Each time the timer goes off starts a goroutine (Go runs timer
	// functions in one); a slow moment of the machine can make a round
	// outlast the hand-over time. One per round is what starting a reader
	// each round costs.
	if n > fires+rounds/5 {
		t.Errorf("%d goroutines started for %d quick rounds (the watch's timer went off %d times), want none more", n, rounds, fires)
	}

	// A round that lasts: its command_status is answered while it runs.
	send(t, conn, "long", command.Command{Namespace: "box", ToolName: "hold", CallID: "held"})
	select {
	case <-holding:
	case <-time.After(30 * time.Second):
		t.Fatal("hold never started")
	}
	status := round(t, conn, "status", command.Command{ToolName: command.CommandStatus, Parameters: map[string]any{"call_id": "held"}, CallID: "s"})
	if len(status.ActionResults) != 1 || !strings.Contains(string(status.ActionResults[0].Result), `"state":"running"`) {
		t.Fatalf("command_status while hold runs: %+v", status.ActionResults)
	}
	close(hold)
	res := results(t, conn, "long")
	if len(res.ActionResults) != 1 || string(res.ActionResults[0].Result) != `"released"` {
		t.Fatalf("hold: %+v", res.ActionResults)
	}
	// And the reader that took over reads the next quick round.
	round(t, conn, "after", command.Command{Namespace: "box", ToolName: "echo", Parameters: map[string]any{"text": "x"}, CallID: "a"})
}

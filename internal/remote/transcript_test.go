package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/internal/aiptest"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/tools"
)

const transcripts = "../../testdata/aip/transcripts"

// peerEcho is the device of the transcripts: namespace peer_echo with an
// echo tool (returns its arguments) and a fail tool (fails with "why").
func peerEcho(t *testing.T) *client.Client {
	t.Helper()
	type echoArgs struct {
		Text string `json:"text,omitempty"`
	}
	type failArgs struct {
		Why string `json:"why,omitempty"`
	}
	s := &tools.Server{Name: "peer_echo"}
	s.Add(
		tools.New("echo", "echo parameters", tools.Annotations{}, func(ctx context.Context, in echoArgs) (echoArgs, error) {
			return in, nil
		}),
		tools.New("fail", "fail on purpose", tools.Annotations{}, func(ctx context.Context, in failArgs) (any, error) {
			if in.Why == "" {
				in.Why = "failed"
			}
			return nil, errors.New(in.Why)
		}))
	c, err := client.New(context.Background(), []client.Server{{Namespace: "peer_echo", MCP: s}}, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ufoServer plays the server side of a transcript to whoever connects:
// s2c frames are sent verbatim, c2s frames are read (heartbeats skipped)
// and handed to check.
func ufoServer(t *testing.T, lines []aiptest.Line, check func(want, got *aip.ClientMessage)) (url string, done chan struct{}) {
	done = make(chan struct{})
	var first atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !first.CompareAndSwap(false, true) {
			// The client reconnects after the replay closes: not part of it.
			http.Error(w, "replay over", http.StatusServiceUnavailable)
			return
		}
		defer close(done)
		c, err := aip.Accept(w, r, aip.ConnOptions{})
		if err != nil {
			t.Error(err)
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for i, l := range lines {
			if l.Dir == "s2c" {
				if err := c.SendRaw(ctx, l.Frame); err != nil {
					t.Errorf("line %d: send: %v", i+1, err)
					return
				}
				continue
			}
			want, err := aip.DecodeClient(l.Frame)
			if err != nil {
				t.Fatal(err)
			}
			if want.Type == aip.TypeHeartbeat {
				continue // the client's heartbeats keep their own time
			}
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					t.Errorf("line %d: waiting for %s: %v", i+1, want.Type, err)
					return
				}
				got, err := aip.DecodeClient(b)
				if err != nil {
					t.Errorf("line %d: the client sent a bad frame: %v\n%s", i+1, err, b)
					return
				}
				if got.Type == aip.TypeHeartbeat {
					continue
				}
				if got.Type != want.Type {
					t.Errorf("line %d: client sent %s, UFO's client sent %s", i+1, got.Type, want.Type)
					return
				}
				check(want, got)
				break
			}
		}
	}))
	t.Cleanup(hs.Close)
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", done
}

// compare checks a Saucer client's frame against UFO's client's.
func compare(t *testing.T, want, got *aip.ClientMessage) {
	t.Helper()
	if got.Status != want.Status || got.ClientType != want.ClientType || got.ClientID != want.ClientID {
		t.Errorf("%s: status/client %s/%s/%s, UFO %s/%s/%s", want.Type, got.Status, got.ClientType, got.ClientID,
			want.Status, want.ClientType, want.ClientID)
	}
	switch want.Type {
	case aip.TypeRegister:
		si, _ := got.Metadata["system_info"].(map[string]any)
		if got.Metadata["platform"] == nil || si == nil || si["device_id"] != want.ClientID || got.Metadata["registration_time"] == nil {
			t.Errorf("register metadata %v", got.Metadata)
		}
	case aip.TypeTask:
		if got.Request != want.Request || got.TaskName != want.TaskName || got.RequestID == "" {
			t.Errorf("task request %q/%q, UFO %q/%q", got.Request, got.TaskName, want.Request, want.TaskName)
		}
	case aip.TypeCommandResults:
		if got.PrevResponseID != want.PrevResponseID || got.SessionID != want.SessionID {
			t.Errorf("results answer %s (session %s), UFO %s (%s)", got.PrevResponseID, got.SessionID, want.PrevResponseID, want.SessionID)
		}
		if len(got.ActionResults) != len(want.ActionResults) {
			t.Fatalf("%d results, UFO %d", len(got.ActionResults), len(want.ActionResults))
		}
		for i, w := range want.ActionResults {
			g := got.ActionResults[i]
			if g.Status != w.Status || g.CallID != w.CallID || g.Error != w.Error {
				t.Errorf("result %d: %s %s %q, UFO %s %s %q", i, g.Status, g.CallID, g.Error, w.Status, w.CallID, w.Error)
			}
			if w.Namespace != "" && g.Namespace != w.Namespace {
				t.Errorf("result %d namespace %q, UFO %q", i, g.Namespace, w.Namespace)
			}
			var wv, gv any
			json.Unmarshal(w.Result, &wv)
			json.Unmarshal(g.Result, &gv)
			if list, ok := wv.([]any); ok { // list_tools: UFO's echo tool must be in ours
				found := false
				for _, e := range gv.([]any) {
					m := e.(map[string]any)
					found = found || (m["tool_key"] == "action::echo" && m["namespace"] == "peer_echo" && m["tool_name"] == "echo")
				}
				if !found || len(list) == 0 {
					t.Errorf("list_tools result lacks action::echo in peer_echo: %s", g.Result)
				}
			} else if !reflect.DeepEqual(wv, gv) {
				t.Errorf("result %d payload %s, UFO %s", i, g.Result, w.Result)
			}
		}
	}
}

// TestTranscriptServerDispatch replays UFO's server side of a dispatched
// task to a Saucer device client: it registers as UFO's client does,
// answers the pushed task by asking for it, runs both command frames
// (the second fails, and the rest is skipped with UFO's words) and returns
// the same results to the same ids.
func TestTranscriptServerDispatch(t *testing.T) {
	lines := aiptest.Transcript(t, filepath.Join(transcripts, "server_dispatch_flow.jsonl"))
	var checked []aip.Type
	url, done := ufoServer(t, lines, func(w, g *aip.ClientMessage) { compare(t, w, g); checked = append(checked, g.Type) })
	c, err := remote.New(peerEcho(t), remote.Options{URL: url, ClientID: "dev_py_1", HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the replay did not finish")
	}
	if want := []aip.Type{aip.TypeRegister, aip.TypeTask, aip.TypeCommandResults, aip.TypeCommandResults}; !reflect.DeepEqual(checked, want) {
		t.Errorf("compared frames %v, want %v", checked, want)
	}
}

// TestTranscriptClientRequest replays UFO's server side of a task the
// device itself asked for (saucer client --request).
func TestTranscriptClientRequest(t *testing.T) {
	lines := aiptest.Transcript(t, filepath.Join(transcripts, "client_request_flow.jsonl"))
	var checked []aip.Type
	url, done := ufoServer(t, lines, func(w, g *aip.ClientMessage) { compare(t, w, g); checked = append(checked, g.Type) })
	c, err := remote.New(peerEcho(t), remote.Options{URL: url, ClientID: "dev_py_2"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	tctx, tcancel := context.WithTimeout(ctx, 15*time.Second)
	defer tcancel()
	end, err := c.StartTask(tctx, "client initiated request", "my_task")
	if err != nil {
		t.Fatal(err)
	}
	if end.Status != aip.StatusCompleted || end.SessionID != "574815d8-53b0-4b80-8cb9-6c503fdee523" || !strings.Contains(string(end.Result), `"steps": 2`) && !strings.Contains(string(end.Result), `"steps":2`) {
		t.Errorf("task end %+v %s", end, end.Result)
	}
	<-done
	if want := []aip.Type{aip.TypeRegister, aip.TypeTask, aip.TypeCommandResults, aip.TypeCommandResults}; !reflect.DeepEqual(checked, want) {
		t.Errorf("compared frames %v, want %v", checked, want)
	}
}

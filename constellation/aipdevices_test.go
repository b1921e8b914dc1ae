package constellation

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server/store"
)

func wsURL(h *httptest.Server) string { return "ws" + strings.TrimPrefix(h.URL, "http") + "/ws" }

// A node runs on a device of another `saucer serve` (not of this
// cluster), reached over AIP as a constellation client: results flow to
// and from it, its files are made there, and an attempt asked for again
// under its key is the same task, run once.
func TestNodesOnAnotherServerOverAIP(t *testing.T) {
	local := newCluster(t, store.NewMemory(), 0, "linux1")
	remote := newCluster(t, store.NewMemory(), 0, "remote1")
	far, err := NewAIPDevices(AIPOptions{URL: wsURL(remote.http), Token: suiteToken, Name: "galaxy",
		Devices: []Device{{ID: "remote1", Apps: []string{"shell"}}, {ID: "remote2", Apps: []string{"shell"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { far.Close() })
	sc := suiteCase{Name: "far", Nodes: []suiteNode{
		{ID: "build", Device: "linux1", Run: "printf 'apples,3\\npears,5\\n' > report.csv && awk -F, '{s+=$2} END {print s}' report.csv"},
		{ID: "copy", Device: "remote1", Run: "echo 'total={{dep:build}}' > copy.txt && echo ran >> marks.txt && cat copy.txt", After: []string{"build"}},
		{ID: "check", Device: "linux1", Run: "test '{{dep:copy}}' = 'total=8' && echo ok | tee checked.txt", After: []string{"copy"}},
	}}
	rec := t.TempDir()
	o, err := New(Options{Devices: Join(ServerDevices{local.srv}, far), NewPlanner: plannerFor(t, sc, 0),
		Store: NewServerStore(local.st), Record: RecordTo(rec)})
	if err != nil {
		t.Fatal(err)
	}
	// remote2 is configured but not connected there: it is not offered.
	ds, err := o.devices(context.Background())
	if err != nil || len(ds) != 2 || ds[0].ID != "linux1" || ds[1].ID != "remote1" {
		t.Fatalf("devices %+v: %v", ds, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := o.Run(ctx, "across servers")
	if err != nil {
		t.Fatal(err)
	}
	checkCase(t, local, suiteCase{Name: "far", Checks: []suiteCheck{{Device: "linux1", File: "checked.txt", Equals: "ok"}}}, g)
	if got, _ := remote.read("remote1", "copy.txt"); got != "total=8" {
		t.Errorf("remote1's copy.txt = %q", got)
	}
	cp := g.Node("copy")
	k := key(g, cp)
	if !strings.HasPrefix(cp.TaskID, "1|aip:remote1/") || cp.Result != "total=8" {
		t.Errorf("copy = %+v", cp)
	}
	tasks := remote.srv.Tasks()
	if len(tasks) != 1 || tasks[0].RequesterID != "galaxy@remote1" || tasks[0].RequesterSession != k {
		t.Fatalf("the other server's tasks: %+v", tasks)
	}

	// A restarted orchestrator that lost the answer asks again under the
	// same key: it gets that task and its end; nothing runs again.
	far.Close()
	again, err := NewAIPDevices(AIPOptions{URL: wsURL(remote.http), Token: suiteToken, Name: "galaxy",
		Devices: []Device{{ID: "remote1", Apps: []string{"shell"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	id, err := again.Start(ctx, "remote1", k, "a different text")
	if err != nil || "1|"+id != cp.TaskID {
		t.Fatalf("asked again: %q %v, want %q", id, err, cp.TaskID)
	}
	out, err := again.Wait(ctx, id)
	if err != nil || !out.OK || out.Result != "total=8" {
		t.Fatalf("its end: %+v %v", out, err)
	}
	if got, _ := remote.read("remote1", "marks.txt"); got != "ran" {
		t.Errorf("remote1 ran the node's command %q, want once", got)
	}
	if n := len(remote.srv.Tasks()); n != 1 {
		t.Errorf("the other server has %d tasks, want 1", n)
	}
	replayFile(t, filepath.Join(rec, g.ID+".jsonl"), g)
}

// ufoServer plays UFO's server with its own frames (testdata/aip, as
// UFO's aip classes write them): registration ok, the task accepted, then
// the task_end that end names, each under the session_id the client gave.
func ufoServer(t *testing.T, end func(device string) string) (*httptest.Server, chan *aip.ClientMessage) {
	golden := func(name, session string) []byte {
		b, err := os.ReadFile(filepath.Join("../testdata/aip", name))
		if err != nil {
			t.Fatal(err)
		}
		if session == "" {
			return b
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		m["session_id"] = session
		b, _ = json.Marshal(m)
		return b
	}
	got := make(chan *aip.ClientMessage, 10)
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("token") != "ufo-key" { // UFO reads only ?token=
			w.WriteHeader(http.StatusForbidden)
			return
		}
		c, err := aip.Accept(w, r, aip.ConnOptions{})
		if err != nil {
			return
		}
		defer c.CloseNow()
		device := ""
		for {
			_, b, err := c.Read(r.Context())
			if err != nil {
				return
			}
			m, err := aip.DecodeClient(b)
			if err != nil {
				t.Errorf("the client sent a bad frame: %v\n%s", err, b)
				return
			}
			got <- m
			switch m.Type {
			case aip.TypeRegister:
				device = m.TargetID
				c.SendRaw(r.Context(), golden("s2c_heartbeat_registration_ok.json", ""))
			case aip.TypeTask:
				c.SendRaw(r.Context(), golden("s2c_heartbeat_task_accepted.json", m.SessionID))
				c.SendRaw(r.Context(), golden(end(device), m.SessionID))
			}
		}
	}))
	t.Cleanup(h.Close)
	return h, got
}

// Against UFO's server, in UFO's own frames: the client registers as
// UFO's Galaxy does, sends a task under its key, reads UFO's result
// shape, and takes UFO's "target device disconnected" end as a lost
// device.
func TestAIPDevicesSpeakUFO(t *testing.T) {
	h, got := ufoServer(t, func(device string) string {
		if device == "ufo2" {
			return "s2c_task_end_failed.json"
		}
		return "s2c_task_end_completed.json"
	})
	far, err := NewAIPDevices(AIPOptions{URL: wsURL(h), Token: "ufo-key", Name: "galaxy",
		Devices: []Device{{ID: "ufo1", Apps: []string{"shell"}}, {ID: "ufo2", Apps: []string{"shell"}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer far.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id, err := far.Start(ctx, "ufo1", "constellation:c1:open:1", "Open Notepad")
	if err != nil {
		t.Fatal(err)
	}
	out, err := far.Wait(ctx, id)
	if err != nil || !out.OK || out.Result != "Notepad opened" {
		t.Fatalf("ufo1: %+v %v", out, err)
	}
	reg, task := <-got, <-got
	if reg.Type != aip.TypeRegister || reg.ClientType != aip.ClientConstellation || reg.ClientID != "galaxy@ufo1" || reg.TargetID != "ufo1" ||
		reg.Metadata["targeted_device_id"] != "ufo1" || reg.Metadata["platform"] == nil {
		t.Errorf("registration %+v", reg)
	}
	if task.Type != aip.TypeTask || task.Status != aip.StatusContinue || task.ClientType != aip.ClientConstellation ||
		task.SessionID != "constellation:c1:open:1" || task.TargetID != "ufo1" || task.Request != "Open Notepad" {
		t.Errorf("task %+v", task)
	}
	id, err = far.Start(ctx, "ufo2", "constellation:c1:open:2", "Open Notepad")
	if err != nil {
		t.Fatal(err)
	}
	out, err = far.Wait(ctx, id)
	if err != nil || out.OK || !out.DeviceLost || !strings.Contains(out.Error, "target device disconnected") {
		t.Fatalf("ufo2: %+v %v", out, err)
	}
	// A wrong key is refused with what to do.
	bad, _ := NewAIPDevices(AIPOptions{URL: wsURL(h), Token: "wrong", Devices: []Device{{ID: "ufo1"}}})
	defer bad.Close()
	if _, err := bad.List(ctx); err == nil || !strings.Contains(err.Error(), "refused the token (HTTP 403)") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("a wrong token: %v", err)
	}
}

package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/client/remote"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/dispatcher"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/server"
)

// noopDevice answers every command at once with a small payload.
type noopDevice struct{}

func (noopDevice) Execute(_ context.Context, cmd command.Command) command.Result {
	return command.Result{Status: command.Success, Result: json.RawMessage(`{"clicked":true}`), CallID: cmd.CallID}
}

func (noopDevice) Device() command.DeviceInfo {
	return command.DeviceInfo{Platform: "linux", Hostname: "bench"}
}

var benchCommand = command.Command{ToolName: "click_input", ToolType: command.Action,
	Parameters: map[string]any{"id": "12", "button": "left"}}

// roundsServer is a server with one connected no-op device whose task runs
// whatever the returned channel is fed: each value is a batch size; a
// round of that many commands runs and its duration comes back.
func roundsServer(b *testing.B) (feed chan int, took chan time.Duration, stop func()) {
	feed, took = make(chan int), make(chan time.Duration)
	session := func(spec server.SessionSpec) (server.Runner, error) {
		return runnerFunc(func(ctx context.Context, _ string) *agent.Outcome {
			for n := range feed {
				cmds := make([]command.Command, n)
				for i := range cmds {
					cmds[i] = benchCommand
				}
				start := time.Now()
				for _, r := range spec.Dispatcher.Execute(ctx, cmds) {
					if !r.OK() {
						b.Errorf("round failed: %s", r.Error)
					}
				}
				took <- time.Since(start)
			}
			return &agent.Outcome{Status: fsm.Finish}
		}), nil
	}
	s, err := server.New(server.Options{Token: token, NewSession: session})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws"
	c, err := remote.New(noopDevice{}, remote.Options{URL: url, Token: token, ClientID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go c.Run(ctx)
	<-c.Connected()
	if _, err := s.Dispatch("bench", "bench", "bench", "bench"); err != nil {
		b.Fatal(err)
	}
	return feed, took, func() {
		close(feed)
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		s.Shutdown(sctx, "benchmark over")
		cancel()
		hs.Close()
	}
}

// rawEcho is a coder/websocket server that echoes each message, read and
// written as JSON (json.RawMessage: validated, not rebuilt), and a client.
func rawEcho(b *testing.B) (*websocket.Conn, func()) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ws.SetReadLimit(aip.DefaultReadLimit)
		for {
			_, msg, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			var v json.RawMessage
			if json.Unmarshal(msg, &v) != nil {
				return
			}
			out, _ := json.Marshal(v)
			if ws.Write(r.Context(), websocket.MessageText, out) != nil {
				return
			}
		}
	}))
	ws, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	return ws, func() { ws.CloseNow(); hs.Close() }
}

// BenchmarkRoundTrip (a): one command over AIP on loopback (server's
// dispatcher → device client → results matched back) against a raw
// coder/websocket JSON echo of the same command frame, in the same run.
// Metrics: aip-ns/op, raw-ns/op and their ratio (target ≤ 1.5).
func BenchmarkRoundTrip(b *testing.B) {
	feed, took, stop := roundsServer(b)
	defer stop()
	ws, closeEcho := rawEcho(b)
	defer closeEcho()
	frame, _ := (&aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, SessionID: dispatcher.NewUUID(),
		TaskName: "bench", ResponseID: dispatcher.NewUUID(), Timestamp: aip.Timestamp(time.Now()),
		Actions: []command.Command{{ToolName: benchCommand.ToolName, ToolType: benchCommand.ToolType,
			Parameters: benchCommand.Parameters, CallID: dispatcher.NewUUID()}}}).Append(nil)
	ctx := context.Background()
	echo := func() time.Duration {
		start := time.Now()
		if err := ws.Write(ctx, websocket.MessageText, frame); err != nil {
			b.Fatal(err)
		}
		_, msg, err := ws.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var v json.RawMessage
		if err := json.Unmarshal(msg, &v); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for range 50 { // warm both paths
		feed <- 1
		<-took
		echo()
	}
	b.ResetTimer()
	var aipTotal, rawTotal time.Duration
	for i := 0; i < b.N; i++ {
		feed <- 1
		aipTotal += <-took
		rawTotal += echo()
	}
	aipNs, rawNs := float64(aipTotal.Nanoseconds())/float64(b.N), float64(rawTotal.Nanoseconds())/float64(b.N)
	b.ReportMetric(aipNs, "aip-ns/op")
	b.ReportMetric(rawNs, "raw-ns/op")
	b.ReportMetric(aipNs/rawNs, "ratio")
}

// BenchmarkCommandsPerSecond (c): commands through one connection, in
// rounds of 1 and of 10 commands.
func BenchmarkCommandsPerSecond(b *testing.B) {
	for _, batch := range []int{1, 10} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			feed, took, stop := roundsServer(b)
			defer stop()
			b.ResetTimer()
			start := time.Now()
			for done := 0; done < b.N; done += batch {
				feed <- min(batch, b.N-done)
				<-took
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cmds/s")
		})
	}
}

// rssBytes is this process's resident set size.
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// raiseFileLimit lifts the soft open-files limit to the hard one.
func raiseFileLimit() uint64 {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) != nil {
		return 0
	}
	l.Cur = l.Max
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l)
	return l.Cur
}

// TestMain doubles as the client process of BenchmarkIdleClients: the
// clients run in their own process so that each side has its own file
// descriptors (both ends of 10,000 loopback sockets exceed one process's
// limit here).
func TestMain(m *testing.M) {
	if url := os.Getenv("SAUCER_BENCH_CLIENTS_URL"); url != "" {
		os.Exit(runIdleClients(url))
	}
	os.Exit(m.Run())
}

// runIdleClients connects n device clients with heartbeats, reports READY
// with its RSS, and stays until its stdin closes.
func runIdleClients(url string) int {
	n, _ := strconv.Atoi(os.Getenv("SAUCER_BENCH_CLIENTS_N"))
	raiseFileLimit()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sem := make(chan struct{}, 64) // bounded dialing: the listener's backlog is finite
	var wg sync.WaitGroup
	for i := range n {
		c, err := remote.New(noopDevice{}, remote.Options{URL: url, Token: token, ClientID: fmt.Sprintf("idle-%05d", i),
			HeartbeatInterval: 5 * time.Second, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second})
		if err != nil {
			fmt.Println("ERROR", err)
			return 1
		}
		sem <- struct{}{}
		wg.Add(1)
		go c.Run(ctx)
		go func() {
			defer wg.Done()
			select {
			case <-c.Connected():
			case <-time.After(2 * time.Minute):
				fmt.Println("ERROR", "client did not connect")
			}
			<-sem
		}()
	}
	wg.Wait()
	time.Sleep(6 * time.Second) // a round of heartbeats
	runtime.GC()
	fmt.Println("READY", rssBytes())
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// BenchmarkIdleClients (b): memory per idle connected device client with
// heartbeats every 5 s, on the server and in the clients' process. The
// sizes come from SAUCER_BENCH_CLIENTS (default "1000"; e.g.
// "1000,10000" — 10,000 takes about a minute and a GiB).
func BenchmarkIdleClients(b *testing.B) {
	sizes := os.Getenv("SAUCER_BENCH_CLIENTS")
	if sizes == "" {
		sizes = "1000"
	}
	for _, s := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			b.Fatalf("SAUCER_BENCH_CLIENTS: %q is not a count", s)
		}
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			if limit := raiseFileLimit(); limit < uint64(n)+256 {
				b.Skipf("the open-files limit (%d) is too low for %d connections", limit, n)
			}
			for range b.N {
				idleClients(b, n)
			}
		})
	}
}

// liveBytes is the Go heap and stacks in use after a full collection. The
// server side is measured this way rather than by RSS because the benchmark
// process also ran other benchmarks, whose freed memory the OS may reclaim
// mid-measurement and turn an RSS difference negative.
func liveBytes() int64 {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse + ms.StackInuse)
}

func idleClients(b *testing.B, n int) {
	baseLive := liveBytes()
	s, err := server.New(server.Options{Token: token, NewSession: rounds(nil), MaxDevices: n + 10})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.Shutdown(ctx, "benchmark over")
	}()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SAUCER_BENCH_CLIENTS_URL=ws"+strings.TrimPrefix(hs.URL, "http")+"/ws",
		"SAUCER_BENCH_CLIENTS_N="+strconv.Itoa(n))
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	var clientRSS int64
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR") {
			b.Fatal(line)
		}
		if v, ok := strings.CutPrefix(line, "READY "); ok {
			clientRSS, _ = strconv.ParseInt(v, 10, 64)
			break
		}
	}
	if got := len(s.Clients()); got != n {
		b.Fatalf("%d clients registered, want %d", got, n)
	}
	serverRSS := liveBytes() - baseLive
	b.ReportMetric(float64(serverRSS)/float64(n), "server-B/client")
	b.ReportMetric(float64(clientRSS)/float64(n), "client-B/client")
	b.ReportMetric(float64(serverRSS+clientRSS)/(1<<20), "total-MiB")
	b.ReportMetric(float64(runtime.NumGoroutine())/float64(n), "server-goroutines/client")
}

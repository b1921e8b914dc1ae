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
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/fsm"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/internal/uuid"
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
// Metrics: aip-ns/op, raw-ns/op and their ratio (issue 21's goal ≤ 1.2;
// CI fails above 1.45: a later machine of the same kind read 1.32-1.37).
func BenchmarkRoundTrip(b *testing.B) {
	feed, took, stop := roundsServer(b)
	defer stop()
	ws, closeEcho := rawEcho(b)
	defer closeEcho()
	frame, _ := (&aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, SessionID: uuid.New(),
		TaskName: "bench", ResponseID: uuid.New(), Timestamp: aip.Timestamp(time.Now()),
		Actions: []command.Command{{ToolName: benchCommand.ToolName, ToolType: benchCommand.ToolType,
			Parameters: benchCommand.Parameters, CallID: uuid.New()}}}).Append(nil)
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
	if os.Getenv("SAUCER_BENCH_PROFILES") != "" {
		runtime.MemProfileRate = 1 // every allocation, for writeProfiles
	}
	if url := os.Getenv("SAUCER_BENCH_CLIENTS_URL"); url != "" {
		os.Exit(runIdleClients(url))
	}
	if url := os.Getenv("SAUCER_BENCH_DEVICE_URL"); url != "" {
		os.Exit(runBenchDevice(url))
	}
	os.Exit(m.Run())
}

// startPeerProcess runs this test binary again as the peer that env
// names (see TestMain) and returns what it prints; stop closes its stdin,
// which ends it, and waits for it.
func startPeerProcess(b *testing.B, env ...string) (out *bufio.Scanner, stop func()) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return bufio.NewScanner(stdout), func() { stdin.Close(); cmd.Wait() }
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
			HeartbeatInterval: 5 * time.Second, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second,
			Conn: aip.ConnOptions{PingInterval: benchPings()}})
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
	writeProfiles("clients")
	fmt.Println("MEM", goMemory())
	fmt.Println("READY", rssBytes(), runtime.NumGoroutine())
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
}

// BenchmarkIdleClients (b): the memory that n idle device clients cost,
// connected over loopback with heartbeats every 5 s: the server's, the
// clients' process's and the kernel's for their sockets. Target: under
// 512 MiB in all for 10,000 clients (checked from 10,000 clients up, in
// proportion). Each iteration must also give back every file and
// goroutine it took, so that the next one starts clean.
//
// The sizes come from SAUCER_BENCH_CLIENTS (default "1000"). The
// 10,000-client case, twice in a row (under a minute; needs an open-files
// hard limit above 10,000):
//
//	SAUCER_BENCH_CLIENTS=10000 go test -run '^$' -bench BenchmarkIdleClients -benchtime 2x ./server/
//
// The connections ping each way at aip's default interval (20 s), which
// most of a run does not reach: SAUCER_BENCH_PINGS=3s counts what
// answering pings leaves behind too (coder/websocket writes each pong
// from the reader's goroutine). SAUCER_BENCH_PROFILES=DIR writes each
// process's heap profile (every allocation) and goroutines there.
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
			fds, gos := openFDs(b), runtime.NumGoroutine()
			var worst idleMemory
			for i := range b.N {
				m, gcPercent := idleClients(b, n)
				b.Logf("iteration %d of %d: %s", i+1, b.N, m.String(n))
				if m.total() > worst.total() {
					worst = m
				}
				if budget := idleBudget * int64(n) / 10_000; n >= 10_000 && m.total() > budget {
					// Said, not failed: one run's figure moves by about 30
					// MiB with where each process is in its GC cycle, and
					// .ci/benchcheck judges the median of several.
					b.Logf("%d idle clients took %.0f MiB, over the target of %.0f MiB (512 MiB per 10,000): %s",
						n, mib(m.total()), mib(budget), m.String(n))
				}
				settled(b, fds, gos, gcPercent)
			}
			b.ReportMetric(mib(worst.server), "server-MiB")
			b.ReportMetric(mib(worst.client), "client-MiB")
			b.ReportMetric(mib(worst.sockbuf), "sockbuf-MiB")
			b.ReportMetric(mib(worst.slab), "sockslab-MiB")
			b.ReportMetric(mib(worst.total()), "total-MiB")
			b.ReportMetric(float64(worst.total())/float64(n), "B/client")
			b.ReportMetric(worst.serverGoroutines/float64(n), "server-goroutines/client")
			b.ReportMetric(worst.clientGoroutines/float64(n), "client-goroutines/client")
		})
	}
}

// goMemory says where a process's memory is, as the Go runtime sees it:
// what the heap holds, what its goroutines' stacks hold, and what the
// runtime keeps from the OS without using it.
func goMemory() string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return fmt.Sprintf("heap in use %.1f MiB (live objects %.1f MiB), stacks %.1f MiB, idle heap kept %.1f MiB, runtime %.1f MiB",
		mib(int64(ms.HeapInuse)), mib(int64(ms.HeapAlloc)), mib(int64(ms.StackInuse)), mib(int64(ms.HeapIdle-ms.HeapReleased)),
		mib(int64(ms.MSpanInuse+ms.MCacheInuse+ms.GCSys+ms.OtherSys+ms.BuckHashSys)))
}

// writeProfiles writes the process's heap and goroutine profiles into
// the folder SAUCER_BENCH_PROFILES names, if it is set, as
// SIDE.heap.pprof and SIDE.goroutines.txt: where an idle connection's
// memory goes (go tool pprof -sample_index=inuse_space).
func writeProfiles(side string) {
	dir := os.Getenv("SAUCER_BENCH_PROFILES")
	if dir == "" {
		return
	}
	runtime.GC()
	for name, write := range map[string]func(*os.File) error{
		side + ".heap.pprof":     func(f *os.File) error { return pprof.Lookup("heap").WriteTo(f, 0) },
		side + ".goroutines.txt": func(f *os.File) error { return pprof.Lookup("goroutine").WriteTo(f, 1) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err == nil {
			err = write(f)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
		}
	}
}

// benchPings is the ping interval of BenchmarkIdleClients's connections,
// each way: aip's default unless SAUCER_BENCH_PINGS names another (a
// few seconds, to count what answering pings leaves behind).
func benchPings() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("SAUCER_BENCH_PINGS"))
	return d
}

// idleBudget is the memory 10,000 idle clients may take in all.
const idleBudget = 512 << 20

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// idleMemory is what one run of idle clients cost, in bytes.
type idleMemory struct {
	server, client, sockbuf, slab      int64
	serverGoroutines, clientGoroutines float64
}

func (m idleMemory) total() int64 { return m.server + m.client + m.sockbuf + m.slab }

func (m idleMemory) String(n int) string {
	return fmt.Sprintf("server %.1f MiB + clients %.1f MiB + socket buffers %.1f MiB + socket slabs %.1f MiB = %.1f MiB (%d B/client); goroutines/client: server %.2f, clients %.2f",
		mib(m.server), mib(m.client), mib(m.sockbuf), mib(m.slab), mib(m.total()), m.total()/int64(n),
		m.serverGoroutines/float64(n), m.clientGoroutines/float64(n))
}

// settled waits for this process's open files and goroutines to come back
// to where they were before the iterations, and fails the benchmark if they
// do not: a leak per connection would make the next iteration run out of
// files (an earlier version hung on accept: too many open files).
// idleClients turned the collector off for the teardown, and settled
// turns it back on (to gcPercent) once it has counted: coder/websocket
// closes a connection nobody refers to from a finalizer, which would hide
// a server that forgot to close its connections.
func settled(b *testing.B, fds, gos, gcPercent int) {
	b.Helper()
	defer debug.SetGCPercent(gcPercent)
	deadline := time.Now().Add(30 * time.Second)
	for {
		nfds, ngos := openFDs(b), runtime.NumGoroutine()
		if nfds <= fds+4 && ngos <= gos+8 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("after an iteration: %d open files (were %d), %d goroutines (were %d): connections leak", nfds, fds, ngos, gos)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverBytes is the benchmark process's resident memory, which grows by
// what the server takes. RSS rather than the live heap: a Go heap runs up
// to twice its live size between collections (GOGC=100), and fragmented
// spans and freed stacks stay resident until the runtime scavenges them;
// that is all memory the machine must have. The baseline is taken after
// debug.FreeOSMemory, so that memory freed by earlier benchmarks or
// iterations is not returned to the OS in the middle of the measurement
// (which made an earlier RSS difference come out negative).
func serverBytes(baseline bool) int64 {
	if baseline {
		debug.FreeOSMemory()
	}
	return rssBytes()
}

// tcpBufferBytes is the memory the kernel has charged to TCP sockets'
// queues (data received and not yet read, sent and not yet acknowledged):
// /proc/net/sockstat's "TCP: ... mem N", in pages, for this network
// namespace. IPv6 TCP sockets are charged to the same counter (the kernel's
// tcpv6_prot shares tcp_memory_allocated), which is why /proc/net/sockstat6
// has no mem field and is not read.
func tcpBufferBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		b.Fatalf("socket buffer memory: %v (the benchmark needs Linux's /proc)", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "TCP: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i+1 < len(f); i += 2 {
			if f[i] == "mem" {
				pages, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					b.Fatalf("/proc/net/sockstat: %q: %v", line, err)
				}
				return pages * int64(os.Getpagesize())
			}
		}
	}
	b.Fatalf("/proc/net/sockstat has no TCP mem field:\n%s", raw)
	return 0
}

// socketSlabs are the kernel's slab caches that grow by an object or two
// with each open TCP socket: the socket itself, its inode, dentry and file,
// and its entry in the epoll set. (Measured with 10,000 clients: TCP
// about 2.4 KiB per socket, sock_inode_cache 0.8 KiB, the rest 0.1–0.2 KiB
// each.) Dentries and files are shared with everything else on the
// machine, so other work running at the same time can only inflate the
// figure, not hide sockets.
var socketSlabs = []string{"TCP", "TCPv6", "sock_inode_cache", "dentry", "filp", "eventpoll_epi", "eventpoll_pwq"}

// socketSlabBytes is the memory in socketSlabs (whole slabs, as the kernel
// holds them), from /proc/slabinfo; false when that cannot be read (it is
// readable by root only).
func socketSlabBytes() (int64, bool) {
	raw, err := os.ReadFile("/proc/slabinfo")
	if err != nil {
		return 0, false
	}
	var total int64
	for _, line := range strings.Split(string(raw), "\n") {
		// name active_objs num_objs objsize objperslab pagesperslab : tunables l b s : slabdata active_slabs num_slabs sharedavail
		f := strings.Fields(line)
		if len(f) < 16 || !slices.Contains(socketSlabs, f[0]) {
			continue
		}
		pagesPerSlab, _ := strconv.ParseInt(f[5], 10, 64)
		slabs, _ := strconv.ParseInt(f[14], 10, 64)
		total += pagesPerSlab * slabs * int64(os.Getpagesize())
	}
	return total, true
}

// idleClients runs one iteration and measures it. It returns with the
// collector off (see settled) and the GOGC it found.
func idleClients(b *testing.B, n int) (m idleMemory, gcPercent int) {
	baseGoroutines := runtime.NumGoroutine()
	baseServer := serverBytes(true)
	baseSockbuf := tcpBufferBytes(b)
	baseSlab, slabOK := socketSlabBytes()
	s, err := server.New(server.Options{Token: token, NewSession: rounds(nil), MaxDevices: n + 10,
		Conn: aip.ConnOptions{PingInterval: benchPings()}})
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
	sc, stop := startPeerProcess(b, "SAUCER_BENCH_CLIENTS_URL=ws"+strings.TrimPrefix(hs.URL, "http")+"/ws",
		"SAUCER_BENCH_CLIENTS_N="+strconv.Itoa(n))
	defer stop()
	ready := false
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR") {
			b.Fatal(line)
		}
		if v, ok := strings.CutPrefix(line, "MEM "); ok {
			b.Logf("clients' process: %s", v)
		}
		if v, ok := strings.CutPrefix(line, "READY "); ok {
			f := strings.Fields(v)
			if len(f) != 2 {
				b.Fatalf("the clients' process said %q", line)
			}
			m.client, _ = strconv.ParseInt(f[0], 10, 64)
			m.clientGoroutines, _ = strconv.ParseFloat(f[1], 64)
			ready = true
			break
		}
	}
	if !ready {
		b.Fatalf("the clients' process ended before its clients were connected")
	}
	if got := len(s.Clients()); got != n {
		b.Fatalf("%d clients registered, want %d", got, n)
	}
	m.server = serverBytes(false) - baseServer
	writeProfiles("server")
	b.Logf("server's process: %s", goMemory())
	// The kernel's counters also move by what other processes do, and TCP's
	// by per-CPU reserves (up to 1 MiB a CPU, with nothing queued): a
	// difference below zero counts as none rather than shrinking the total.
	m.sockbuf = max(0, tcpBufferBytes(b)-baseSockbuf)
	if slab, ok := socketSlabBytes(); ok && slabOK {
		m.slab = max(0, slab-baseSlab)
	} else {
		b.Logf("/proc/slabinfo cannot be read (run as root to count it): the kernel's socket objects, about 8 KB a client, are left out")
	}
	m.serverGoroutines = float64(runtime.NumGoroutine() - baseGoroutines)
	return m, debug.SetGCPercent(-1)
}

// Command embed-server runs Saucer's agent server inside another program,
// through the entry point `saucer serve` wraps (package serve): the same
// store, HTTP limits, constellations and shutdown order, plus a route of
// the program's own. A device connects to it over AIP as `saucer client`
// would, a task is dispatched through the HTTP API, and the server stops
// in order. The model is scripted, so it runs without a key.
//
//	go run ./examples/embed-server
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/serve"
)

//go:embed script.yaml
var script []byte

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "embed-server:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "saucer-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	scriptPath := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(scriptPath, script, 0o600); err != nil {
		return err
	}

	// The server: the config's defaults, a scripted model, tasks kept in
	// SQLite under the runs directory (serve's default store), and one
	// route of this program's own beside the API and the console.
	cfg := config.Default()
	cfg.Model = "scripted:" + scriptPath
	const key = "example-key"
	srv, err := serve.Start(ctx, serve.Options{Config: cfg, Token: key, Addr: "127.0.0.1:0", RunsDir: filepath.Join(dir, "runs"),
		Handler: func(next http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host program\n") })
			mux.Handle("/", next)
			return mux
		},
		Logf: func(string, ...any) {}})
	if err != nil {
		return err
	}
	defer srv.Stop() // on an early return; Stop below is the same call
	fmt.Println("serving devices on", strings.Replace(srv.URL(), srv.Addr().String(), "ADDR", 1))

	// A device, as saucer client runs one: the config's shell and files
	// tools in a work directory, connected to the server over AIP.
	workdir := filepath.Join(dir, "work")
	if err := os.Mkdir(workdir, 0o755); err != nil {
		return err
	}
	dev, err := local.NewDevice(ctx, cfg, workdir, local.DeviceOptions{})
	if err != nil {
		return err
	}
	stopDevice, err := local.Attach(ctx, dev, srv.URL(), key, "box", local.AttachOptions{})
	if err != nil {
		return fmt.Errorf("the device did not connect: %w", err)
	}
	defer stopDevice()
	fmt.Println("device box connected")

	// A task through the HTTP API, as any client would send it.
	body, _ := json.Marshal(server.DispatchRequest{ClientID: "box", Request: "Write 'Hello from an embedded server' to notes/hello.txt"})
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.ConsoleURL()+"api/dispatch", bytes.NewReader(body))
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	var d server.DispatchResponse
	err = json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("dispatch: %s %v", resp.Status, err)
	}
	info, err := srv.Server().Wait(ctx, d.TaskID)
	if err != nil {
		return err
	}
	fmt.Printf("task: %s\nanswer: %s\n", info.Status, info.Result)
	written, err := os.ReadFile(filepath.Join(workdir, "notes", "hello.txt"))
	if err != nil {
		return err
	}
	fmt.Printf("notes/hello.txt: %s", written)

	// The program's own route, served with the API.
	resp, err = http.Get(srv.ConsoleURL() + "hello")
	if err != nil {
		return err
	}
	hello, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("GET /hello: %d %s", resp.StatusCode, hello)

	// Stop in order: constellations, tasks (suspended in the store), HTTP,
	// the store. Then the device, which no longer has a server.
	if err := srv.Stop(); err != nil {
		return err
	}
	fmt.Println("server stopped")
	stopDevice()
	return nil
}

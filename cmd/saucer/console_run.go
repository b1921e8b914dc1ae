package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/saucerhq/saucer/agent"
	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/console"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/server/serve"
	"github.com/saucerhq/saucer/session"
)

// runWithConsole runs a local task through an agent server on loopback,
// with the web console at addr: the device connects to it as a device
// client does, over a real WebSocket, and the agents' questions and
// approvals wait in the console (the terminal asks nothing). Its key is
// random, printed once, with a link that logs in. The outcome is the
// task's; the server stops when the task ends.
func runWithConsole(ctx context.Context, out io.Writer, cfg *config.Config, dev *client.Client, base session.Options, task, addr, runs string, yes bool) (*agent.Outcome, error) {
	var b [16]byte
	rand.Read(b[:])
	key := hex.EncodeToString(b[:])
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--console %s: %w", addr, err)
	}
	base.Device, base.Asker = nil, nil
	if !yes {
		base.Confirmer = nil // the console decides
	}
	outcome := make(chan *agent.Outcome, 1)
	page := "http://" + ln.Addr().String() + "/"
	sessions := server.Sessions(cfg, base)
	red, err := redactorFor(cfg)
	if err != nil {
		return nil, err
	}
	// Ctrl-C works as in a run without the console: the first cancels the
	// task, whose round waits for the command in progress to end (its
	// CancelGrace is the command's own limit) and records its result; the
	// second (base.Abort) stops that command on the device.
	srv, err := server.New(server.Options{Token: key, Redactor: red, Review: serve.Review(red), RunsDir: runs,
		AskTimeout: cfg.Remote.AskTimeout.D(), CommandTimeout: cfg.Agent.CommandTimeout.D(), CancelGrace: cfg.Agent.CommandTimeout.D(),
		NewSession: func(spec server.SessionSpec) (server.Runner, error) {
			if spec.Person != nil {
				spec.Person = announcingPerson{spec.Person, out, page + "#/tasks/" + spec.TaskID}
			}
			r, err := sessions(spec)
			if err != nil {
				return nil, err
			}
			return reportingRunner{r, outcome}, nil
		}})
	if err != nil {
		ln.Close()
		return nil, err
	}
	hs := &http.Server{Handler: console.Handler(srv.Handler()), ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx, "the run is over")
		hs.Shutdown(sctx)
	}()
	fmt.Fprintf(out, "saucer: console at %s#key=%s (the key, for this run only: %s)\n", page, key, key)

	id, _ := os.Hostname()
	if id == "" {
		id = "local"
	}
	c, err := remote.New(abortableDevice{dev, base.Abort, base.Gate}, remote.Options{URL: "ws://" + ln.Addr().String() + "/ws", Token: key, ClientID: id,
		HeartbeatInterval: time.Second, MinBackoff: 10 * time.Millisecond, MaxBackoff: time.Second})
	if err != nil {
		return nil, err
	}
	cctx, stopClient := context.WithCancel(context.WithoutCancel(ctx))
	clientDone := make(chan error, 1)
	go func() { clientDone <- c.Run(cctx) }()
	defer func() { stopClient(); <-clientDone }()
	select {
	case <-c.Connected():
	case err := <-clientDone:
		return nil, fmt.Errorf("the device could not connect to the console's server: %w", err)
	case <-time.After(30 * time.Second):
		return nil, errors.New("the device did not connect to the console's server within 30s")
	}
	info, err := srv.Dispatch(id, task, "run", "console")
	if err != nil {
		return nil, err
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		ti, _ := srv.Wait(wctx, info.ID)
		cancel()
		if ti.Status != server.StatusRunning {
			break
		}
		if ctx.Err() != nil {
			srv.Cancel(info.ID, "an interrupt")
			break
		}
	}
	select {
	case o := <-outcome:
		if ctx.Err() != nil {
			o.Cancelled = true
		}
		return o, nil
	default:
		ti, _ := srv.Task(info.ID)
		return nil, fmt.Errorf("the task ended without an outcome: %s %s", ti.Status, ti.Error)
	}
}

// announcingPerson says on the terminal that a question or an approval
// waits in the console, with the task's page, before it waits there: a
// person watching the terminal would otherwise see nothing happen.
type announcingPerson struct {
	server.Person
	out  io.Writer
	page string
}

func (p announcingPerson) Ask(ctx context.Context, agent, question string) (string, error) {
	fmt.Fprintf(p.out, "saucer: %s asks, waiting for your answer in the console (%s): %s\n", agent, p.page, question)
	return p.Person.Ask(ctx, agent, question)
}

func (p announcingPerson) Confirm(ctx context.Context, agent string, cmds []command.Command, reason string) (bool, error) {
	fmt.Fprintf(p.out, "saucer: %s asks to approve %d command(s), waiting for you in the console (%s): %s\n", agent, len(cmds), p.page, reason)
	return p.Person.Confirm(ctx, agent, cmds, reason)
}

// reportingRunner hands its task's outcome on.
type reportingRunner struct {
	server.Runner
	outcome chan<- *agent.Outcome
}

func (r reportingRunner) Run(ctx context.Context, request string) *agent.Outcome {
	o := r.Runner.Run(ctx, request)
	select {
	case r.outcome <- o:
	default:
	}
	return o
}

// abortableDevice is the run's device with each command stopped when
// abort ends (the second Ctrl-C), as session.Options.Abort stops a local
// run's: the server's dispatcher, which the agents use here, never
// reaches the command in progress.
type abortableDevice struct {
	*client.Client
	abort context.Context
	gate  func(context.Context) error // the run's Options.Gate
}

func (d abortableDevice) Execute(ctx context.Context, cmd command.Command) command.Result {
	return session.Gated(session.Abortable(d.Client, d.abort), d.gate).Execute(ctx, cmd)
}

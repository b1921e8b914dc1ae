package client_test

import (
	"context"
	"testing"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/internal/shell"
)

// BenchmarkShellCall runs one execute_command ("true") through the client:
// Saucer's shell tool in-process, and the same tool in a child process over
// stdio. The difference is the cost of the stdio transport.
func BenchmarkShellCall(b *testing.B) {
	for _, kind := range []string{"inprocess", "stdio"} {
		b.Run(kind, func(b *testing.B) {
			srv := client.Server{Namespace: "shell", MCP: shell.New(shell.Options{})}
			if kind == "stdio" {
				srv = peer("shell")
				srv.Namespace = "shell"
			}
			c, err := client.New(context.Background(), []client.Server{srv}, client.Options{Logger: quiet, RequireAll: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			cmd := command.Command{Namespace: "shell", ToolName: "execute_command", Parameters: map[string]any{"command": "true"}}
			for b.Loop() {
				if r := c.Execute(context.Background(), cmd); !r.OK() {
					b.Fatal(r.Error)
				}
			}
		})
	}
}

// BenchmarkEcho isolates the transport: a call that does no work, in
// process versus over stdio.
func BenchmarkEcho(b *testing.B) {
	for _, kind := range []string{"inprocess", "stdio"} {
		b.Run(kind, func(b *testing.B) {
			srv := peer("good")
			if kind == "inprocess" {
				srv = client.Foreign(client.Server{Namespace: "peer"}, goodServer())
			}
			c, err := client.New(context.Background(), []client.Server{srv}, client.Options{Logger: quiet, RequireAll: true})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			cmd := command.Command{Namespace: "peer", ToolName: "echo", Parameters: map[string]any{"text": "hi"}}
			for b.Loop() {
				if r := c.Execute(context.Background(), cmd); !r.OK() {
					b.Fatal(r.Error)
				}
			}
		})
	}
}

package client_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/internal/shell"
	"github.com/saucerhq/saucer/tools"
)

// The test binary doubles as the MCP servers the supervision tests start:
// run with SAUCER_TEST_MCP=MODE it becomes a real stdio server process that
// behaves (good) or misbehaves (crash, hang, garbage) on purpose.
const peerEnv = "SAUCER_TEST_MCP"

func TestMain(m *testing.M) {
	if mode := os.Getenv(peerEnv); mode != "" {
		os.Exit(runPeer(mode))
	}
	os.Exit(m.Run())
}

func runPeer(mode string) int {
	switch mode {
	case "good":
		if err := server.ServeStdio(goodServer()); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			return 1
		}
		return 0
	case "shell": // Saucer's own shell tool, over stdio
		if err := mcpserve.Stdio(context.Background(), shell.New(shell.Options{}), os.Stdin, os.Stdout); err != nil {
			return 1
		}
		return 0
	case "steps": // a Saucer Go tool that reports progress, over stdio
		if err := mcpserve.Stdio(context.Background(), stepsServer(), os.Stdin, os.Stdout); err != nil {
			return 1
		}
		return 0
	case "crash":
		fmt.Fprintln(os.Stderr, "fatal: the config file /etc/peer.conf is missing")
		return 3
	case "hang":
		fmt.Fprintln(os.Stderr, "thinking very hard about initialize")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() { // read and never answer
		}
		return 0
	case "garbage":
		fmt.Println("Welcome to PeerServer 1.0! Listening on stdio...")
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			fmt.Println("I do not speak JSON-RPC")
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 2
}

// stepsServer offers a Go tool that reports three steps and returns at
// once: its last report is sent just before its result.
func stepsServer() *tools.Server {
	s := &tools.Server{Name: "work"}
	s.Add(tools.New("steps", "reports three steps", tools.Annotations{Risk: tools.RiskRead},
		func(ctx context.Context, in struct{}) (string, error) {
			for i := 1; i <= 3; i++ {
				tools.ReportProgress(ctx, tools.Progress{Progress: float64(i), Total: 3, Message: fmt.Sprint("step ", i)})
			}
			return "done", nil
		}))
	return s
}

// goodServer is a well-behaved server with tools that exercise the client:
// progress, a mid-call death, huge results, a changing tool list, children.
func goodServer() *server.MCPServer {
	s := server.NewMCPServer("peer", "1", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("pid"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(fmt.Sprint(os.Getpid())), nil
	})
	s.AddTool(mcp.NewTool("sleep", mcp.WithNumber("seconds")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(time.Duration(req.GetFloat("seconds", 1) * float64(time.Second))):
				return mcp.NewToolResultText("slept"), nil
			case <-ctx.Done():
				return mcp.NewToolResultError("interrupted"), nil
			}
		})
	s.AddTool(mcp.NewTool("progress", mcp.WithNumber("steps")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := int(req.GetFloat("steps", 3))
			var token any
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= steps; i++ {
				if token != nil {
					server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": token, "progress": i, "total": steps, "message": fmt.Sprintf("step %d", i),
					})
				}
				time.Sleep(20 * time.Millisecond)
			}
			return mcp.NewToolResultText(fmt.Sprintf("did %d steps", steps)), nil
		})
	s.AddTool(mcp.NewTool("die"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "dying on purpose in the middle of a call")
		os.Exit(7)
		return nil, nil
	})
	s.AddTool(mcp.NewTool("huge", mcp.WithNumber("bytes", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("x", int(req.GetFloat("bytes", 0)))), nil
		})
	s.AddTool(mcp.NewTool("add_tool"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(mcp.NewTool("added", mcp.WithDescription("appeared later")),
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("I am new"), nil
			})
		return mcp.NewToolResultText("added"), nil
	})
	s.AddTool(mcp.NewTool("spawn_child"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// A grandchild that ignores stdin closing, in the server's process
		// group: only a group kill stops it.
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(fmt.Sprint(cmd.Process.Pid)), nil
	})
	return s
}

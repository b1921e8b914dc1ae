// Command provider registers a model provider of its own under the prefix
// "mycorp", so that "mycorp:MODEL" works wherever a model is named: the
// config's model, a suite's, `--model`. Its model implements the two
// methods of llm.Model; this one is canned (a real one would call its
// service), so that the example needs no key.
//
//	go run ./examples/provider
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
)

// model answers every request by finishing the task, in tools mode.
type model struct{ name, key string }

func (m *model) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	args := fmt.Sprintf(`{"result":"%s answered (key from MYCORP_KEY: %t)."}`, m.name, m.key != "")
	return &llm.Response{
		Message:      llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "finish_task", Arguments: args}}},
		FinishReason: "tool_calls",
		Usage:        llm.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110},
	}, nil
}

func (m *model) Stream(ctx context.Context, req *llm.Request, onChunk func(llm.Chunk)) (*llm.Response, error) {
	return m.Complete(ctx, req)
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
}

func run() error {
	open := func(name string, s provider.Settings, env func(string) string) (llm.Model, error) {
		key := s.APIKey // providers.mycorp.api_key in the config, else the environment
		if key == "" {
			key = env("MYCORP_KEY")
		}
		return &model{name: name, key: key}, nil
	}
	if err := provider.Register("mycorp", open); err != nil {
		return err
	}
	// A prefix is registered once.
	if err := provider.Register("mycorp", open); err != nil {
		fmt.Println("registering again:", err)
	}

	ctx := context.Background()
	workdir, err := os.MkdirTemp("", "saucer-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workdir)
	cfg := config.Default()
	cfg.Model = "mycorp:falcon-2"
	if err := cfg.Validate(); err != nil {
		return err
	}
	dev, err := local.Device(ctx, cfg, workdir)
	if err != nil {
		return err
	}
	defer dev.Close()
	sess, err := session.New(cfg, session.Options{Device: dev}) // the model comes from cfg.Model
	if err != nil {
		return err
	}
	out := sess.Run(ctx, "Say who you are")
	fmt.Printf("status: %s\nanswer: %s\n", out.Status, out.Answer)
	return nil
}

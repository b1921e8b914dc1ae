// Command go-tool makes a Go function a tool the agents can call: a
// server, "text", with one typed tool, word_count, whose JSON Schema comes
// from its input type and whose risk class (read) the device policy reads.
// The device serves it in-process beside the configured shell and files
// servers; the host agent sees it as an app.
//
//	go run ./examples/go-tool
package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"strings"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
	"github.com/saucerhq/saucer/tools"
)

// CountInput is word_count's input; its tags become the tool's schema.
type CountInput struct {
	Text string `json:"text" jsonschema_description:"The text whose words to count."`
}

// CountOutput is word_count's result.
type CountOutput struct {
	Words int `json:"words"`
}

func wordCount(ctx context.Context, in CountInput) (CountOutput, error) {
	return CountOutput{Words: len(strings.Fields(in.Text))}, nil
}

//go:embed script.yaml
var script []byte

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "go-tool:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	workdir, err := os.MkdirTemp("", "saucer-example-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(workdir)

	text := &tools.Server{Name: "text"}
	text.Add(tools.New("word_count", "Count the words of a text.", tools.Annotations{Risk: tools.RiskRead}, wordCount))

	cfg := config.Default()
	dev, err := local.NewDevice(ctx, cfg, workdir, local.DeviceOptions{
		Extra: []client.Server{{Namespace: "text", Description: "Text utilities written in Go.", MCP: text}},
	})
	if err != nil {
		return err
	}
	defer dev.Close()
	s, err := scripted.Parse(script, "yaml")
	if err != nil {
		return err
	}
	sess, err := session.New(cfg, session.Options{Device: dev, Model: scripted.New(*s)})
	if err != nil {
		return err
	}
	out := sess.Run(ctx, "How many words are in 'the quick brown fox jumps'?")
	fmt.Printf("status: %s\nanswer: %s\n", out.Status, out.Answer)
	return nil
}

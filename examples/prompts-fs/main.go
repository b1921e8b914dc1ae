// Command prompts-fs runs a session with a prompt set built into the
// program: the templates in prompts/ (embedded) override the built-in ones
// of the same name — here one partial, "device" — and the rest stay as
// they are.
//
//	go run ./examples/prompts-fs
package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"os"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/prompts"
	"github.com/saucerhq/saucer/session"
)

//go:embed prompts/*.tmpl
var overrides embed.FS

//go:embed script.yaml
var script []byte

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "prompts-fs:", err)
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

	dir, err := fs.Sub(overrides, "prompts")
	if err != nil {
		return err
	}
	set, err := prompts.LoadFS(dir, "examples/prompts-fs/prompts")
	if err != nil {
		return err
	}
	cfg := config.Default()
	dev, err := local.Device(ctx, cfg, workdir)
	if err != nil {
		return err
	}
	defer dev.Close()
	s, err := scripted.Parse(script, "yaml")
	if err != nil {
		return err
	}
	model := scripted.New(*s)
	sess, err := session.New(cfg, session.Options{Device: dev, Model: model, Prompts: set})
	if err != nil {
		return err
	}
	out := sess.Run(ctx, "Which lab is this device in?")
	fmt.Printf("status: %s\nanswer: %s\nmodel calls: %d\n", out.Status, out.Answer, model.Count())
	return nil
}

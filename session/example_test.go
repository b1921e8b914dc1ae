package session_test

import (
	"context"
	"fmt"
	"os"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/scripted"
	"github.com/saucerhq/saucer/local"
	"github.com/saucerhq/saucer/session"
)

// The package documentation's snippet, run: a local device over the
// built-in tools, a session of agents over it, a task.
func Example() {
	ctx := context.Background()
	workdir, _ := os.MkdirTemp("", "saucer-example-")
	defer os.RemoveAll(workdir)

	cfg := config.Default()
	dev, err := local.Device(ctx, cfg, workdir)
	if err != nil {
		panic(err)
	}
	defer dev.Close()
	script, _ := scripted.Parse([]byte(`
replies:
  - tool_calls: [{name: finish_task, arguments: {result: "Nothing to archive."}}]
`), "yaml")
	sess, err := session.New(cfg, session.Options{Device: dev, Model: scripted.New(*script)})
	if err != nil {
		panic(err)
	}
	outcome := sess.Run(ctx, "archive the logs")
	fmt.Println(outcome.Status, outcome.Answer)
	// Output: FINISH Nothing to archive.
}

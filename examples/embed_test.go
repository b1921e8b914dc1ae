package examples_test

import (
	"strings"
	"testing"
)

// TestEmbedServer: a program that embeds the agent server through the
// entry point saucer serve wraps serves a device over AIP, runs a task
// dispatched through the HTTP API, serves its own route beside the API,
// and stops in order.
func TestEmbedServer(t *testing.T) {
	t.Parallel()
	out := runExample(t, "embed-server")
	for _, want := range []string{"serving devices on ws://ADDR/ws", "device box connected", "task: completed",
		"answer: notes/hello.txt says hello.", "notes/hello.txt: Hello from an embedded server", "GET /hello: 200 hello from the host program",
		"server stopped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

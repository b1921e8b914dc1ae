package agent_test

import (
	"context"
	"testing"

	"github.com/saucerhq/saucer/client"
	"github.com/saucerhq/saucer/tools"
)

// toolDevice is a device client serving ts in this process under the
// namespace ns, closed when the test ends.
func toolDevice(t testing.TB, ns string, opts client.Options, ts ...*tools.Tool) *client.Client {
	t.Helper()
	srv := &tools.Server{Name: ns}
	srv.Add(ts...)
	dev, err := client.New(context.Background(), []client.Server{{Namespace: ns, MCP: srv}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	return dev
}

package local_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/internal/mcpserve"
	"github.com/saucerhq/saucer/local"
)

// The shell built from the default config gives its commands none of the
// credentials in Saucer's environment: AWS_*, *_KEY, tokens, secrets,
// passwords, and values that are URLs with a password; the rest passes.
func TestDefaultShellScrubsCredentials(t *testing.T) {
	secret := map[string]string{
		"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY",
		"AWS_ACCESS_KEY_ID":     "AKIAIOSFODNN7EXAMPLE",
		"AWS_SESSION_TOKEN":     "session-token-value-1",
		"AWS_PROFILE":           "prod-profile-name",
		"STRIPE_KEY":            "stripe-key-value-2",
		"OPENAI_API_KEY":        "sk-scrubbed-value-3",
		"GITHUB_TOKEN":          "ghp-scrubbed-value-4",
		"deploy_secret":         "lower-case-secret-5",
		"DB_PASSWORD":           "db-password-value-6",
		"DATABASE_URL":          "postgres://app:url-password-7@db.internal:5432/app",
		"REDIS_URL":             "redis://:url-password-8@cache:6379/0",
	}
	visible := map[string]string{
		"SAUCER_TEST_GREETING": "hello-visible",
		"HTTP_PROXY_URL":       "http://proxy.internal:3128",
		"DOCS_URL":             "https://user@docs.example/path",
		"KEYBOARD_LAYOUT":      "dvorak",
	}
	for k, v := range secret {
		t.Setenv(k, v)
	}
	for k, v := range visible {
		t.Setenv(k, v)
	}
	srv, stop, err := local.Builtin(config.Default(), t.TempDir(), "shell")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, err := mcpclient.NewInProcessClient(mcpserve.New(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION, ClientInfo: mcp.Implementation{Name: "test"}}}); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_command", Arguments: map[string]any{"command": "env"}}})
	if err != nil || res.IsError {
		t.Fatalf("env: %v %+v", err, res)
	}
	var out struct{ Stdout string }
	text, _ := mcp.AsTextContent(res.Content[0])
	if err := json.Unmarshal([]byte(text.Text), &out); err != nil {
		t.Fatal(err)
	}
	for k, v := range secret {
		if strings.Contains(out.Stdout, v) {
			t.Errorf("the command sees %s", k)
		}
	}
	for k, v := range visible {
		if !strings.Contains(out.Stdout, k+"="+v+"\n") {
			t.Errorf("%s was scrubbed too", k)
		}
	}
}

package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// The store's directory: the flag, SAUCER_KNOWLEDGE, knowledge.dir, then
// the user's data directory; the embedding model is PROVIDER:MODEL.
func TestKnowledgeSettings(t *testing.T) {
	env := map[string]string{"HOME": "/home/ann"}
	getenv := func(k string) string { return env[k] }
	c, err := FromYAML([]byte("knowledge: {prompt_tokens: 600, embeddings: \"ollama:nomic-embed-text\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	dir := func(flag string) string {
		d, err := c.KnowledgeDir(flag, getenv)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := dir(""); got != filepath.Join("/home/ann", ".local", "share", "saucer", "knowledge") {
		t.Errorf("default: %s", got)
	}
	env["XDG_DATA_HOME"] = "/data"
	if got := dir(""); got != "/data/saucer/knowledge" {
		t.Errorf("XDG_DATA_HOME: %s", got)
	}
	c.Knowledge.Dir = "/srv/knowledge"
	if got := dir(""); got != "/srv/knowledge" {
		t.Errorf("knowledge.dir: %s", got)
	}
	env["SAUCER_KNOWLEDGE"] = "/env/k"
	if got := dir(""); got != "/env/k" {
		t.Errorf("SAUCER_KNOWLEDGE: %s", got)
	}
	if got := dir("/flag/k"); got != "/flag/k" {
		t.Errorf("--dir: %s", got)
	}
	if p, m, err := c.Knowledge.EmbeddingsModel(); p != "ollama" || m != "nomic-embed-text" || err != nil {
		t.Errorf("embeddings: %q %q %v", p, m, err)
	}
	if c.Knowledge.PromptBudget() != 600 || (Knowledge{}).PromptBudget() != DefaultKnowledgePromptTokens {
		t.Errorf("budgets: %d, %d", c.Knowledge.PromptBudget(), (Knowledge{}).PromptBudget())
	}
	if _, _, err := (Knowledge{Embeddings: "nomic"}).EmbeddingsModel(); err == nil || !strings.Contains(err.Error(), "PROVIDER:MODEL") {
		t.Errorf("a bad model: %v", err)
	}
	if _, err := FromYAML([]byte("knowledge: {directory: /x}\n")); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("an unknown key: %v", err)
	}
}

// Where the store is: --store or --dir, SAUCER_KNOWLEDGE (a URL or a
// directory), knowledge.store (a PostgreSQL URL, checked), then the
// directory; a bad knowledge.store is an error that does not repeat it.
func TestKnowledgeStoreSetting(t *testing.T) {
	env := map[string]string{"HOME": "/home/ann"}
	getenv := func(k string) string { return env[k] }
	c, err := FromYAML([]byte("knowledge: {store: \"postgres://saucer:pw-in-config@db:5432/knowledge\", dir: /srv/k}\n"))
	if err != nil {
		t.Fatal(err)
	}
	where := func(flag string) string {
		d, err := c.KnowledgeStore(flag, getenv)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if got := where(""); got != "postgres://saucer:pw-in-config@db:5432/knowledge" {
		t.Errorf("knowledge.store: %s", got)
	}
	env["SAUCER_KNOWLEDGE"] = "postgresql://other@db2/k"
	if got := where(""); got != "postgresql://other@db2/k" {
		t.Errorf("SAUCER_KNOWLEDGE: %s", got)
	}
	if got := where("/flag/k"); got != "/flag/k" {
		t.Errorf("--dir: %s", got)
	}
	delete(env, "SAUCER_KNOWLEDGE")
	c.Knowledge.Store = ""
	if got := where(""); got != "/srv/k" {
		t.Errorf("no store: %s, want knowledge.dir", got)
	}
	c.Knowledge.Store = "mysql://saucer:pw-in-config@db/k"
	if _, err := c.KnowledgeStore("", getenv); err == nil || !strings.Contains(err.Error(), "postgres://USER:PASSWORD@HOST:PORT/DATABASE") || strings.Contains(err.Error(), "pw-in-config") {
		t.Errorf("a store that is no PostgreSQL URL: %v", err)
	}
	if !IsPostgresURL("postgres://h/d") || !IsPostgresURL("postgresql://h/d") || IsPostgresURL("/var/lib/k") {
		t.Error("IsPostgresURL")
	}
}

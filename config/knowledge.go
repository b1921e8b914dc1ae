package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Knowledge configures what agents learn from (package knowledge):
// experience and demonstrations drawn from recorded runs, and help
// documents, kept in a store (`saucer learn` fills it).
type Knowledge struct {
	// Use says when agents are given what the store holds: auto (the
	// default, "" too) once the store has entries, on (a missing or empty
	// store is an error), off.
	Use string `yaml:"use"`
	// Learn learns each recorded run as it ends (saucer run, and each
	// task of saucer serve), as saucer learn would: later runs are given
	// its experience. A run whose answer was wrong is learned as a
	// success unless checks said otherwise: learn eval results with
	// saucer learn, which reads their checks.
	Learn bool `yaml:"learn"`
	// Store is a PostgreSQL database that a fleet of servers shares
	// (postgres://USER:PASSWORD@HOST:PORT/DATABASE); empty means the
	// directory store at Dir. SAUCER_KNOWLEDGE (a URL or a directory),
	// --store and --dir override it.
	Store string `yaml:"store"`
	// Dir is the store's directory; empty means $XDG_DATA_HOME/saucer/knowledge
	// (~/.local/share/saucer/knowledge). SAUCER_KNOWLEDGE or --dir override it.
	Dir string `yaml:"dir"`
	// Embeddings names an embedding model as PROVIDER:MODEL
	// (openai:text-embedding-3-small, ollama:nomic-embed-text), reached
	// with that provider's settings under providers:. Empty: the lexical
	// index alone (BM25), no service needed.
	Embeddings string `yaml:"embeddings"`
	// PromptTokens bounds what one agent is given of the store, in tokens
	// (0: 1000).
	PromptTokens int `yaml:"prompt_tokens"`
}

// Retrieval modes of Knowledge.Use.
const (
	KnowledgeAuto = "auto"
	KnowledgeOn   = "on"
	KnowledgeOff  = "off"
)

// UseMode is knowledge.use checked: auto for "", or an error that names
// the choices.
func (k Knowledge) UseMode() (string, error) {
	switch u := strings.TrimSpace(k.Use); u {
	case "", KnowledgeAuto:
		return KnowledgeAuto, nil
	case KnowledgeOn, KnowledgeOff:
		return u, nil
	}
	return "", fmt.Errorf("knowledge.use %q: give auto (once the store has entries), on or off", k.Use)
}

// DefaultKnowledgePromptTokens is the budget PromptTokens 0 stands for.
const DefaultKnowledgePromptTokens = 1000

// KnowledgeDir is the store's directory: flag, else SAUCER_KNOWLEDGE,
// else knowledge.dir, else the user's data directory. getenv nil means
// os.Getenv.
func (c *Config) KnowledgeDir(flag string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, d := range []string{flag, getenv("SAUCER_KNOWLEDGE"), c.Knowledge.Dir} {
		if strings.TrimSpace(d) != "" {
			return d, nil
		}
	}
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "saucer", "knowledge"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil || home == "" {
			return "", errors.New("config: no directory for the knowledge store: set knowledge.dir, SAUCER_KNOWLEDGE or HOME")
		}
	}
	return filepath.Join(home, ".local", "share", "saucer", "knowledge"), nil
}

// IsPostgresURL says whether a knowledge store names a PostgreSQL
// database rather than a directory.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// KnowledgeStore is where the knowledge store is, a postgres:// URL or a
// directory: flag (--store or --dir), else SAUCER_KNOWLEDGE, else
// knowledge.store, else the directory KnowledgeDir finds. getenv nil
// means os.Getenv. The error never repeats the setting, which may hold a
// password.
func (c *Config) KnowledgeStore(flag string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, d := range []string{flag, getenv("SAUCER_KNOWLEDGE")} {
		if strings.TrimSpace(d) != "" {
			return d, nil
		}
	}
	if st := strings.TrimSpace(c.Knowledge.Store); st != "" {
		if !IsPostgresURL(st) {
			return "", errors.New("config: knowledge.store is not a postgres:// URL: give postgres://USER:PASSWORD@HOST:PORT/DATABASE for a store a fleet of servers shares, or leave it empty for the directory store at knowledge.dir")
		}
		return st, nil
	}
	return c.KnowledgeDir("", getenv)
}

// EmbeddingsModel splits knowledge.embeddings into its provider and
// model; both are empty when no embedding model is set.
func (k Knowledge) EmbeddingsModel() (provider, model string, err error) {
	if strings.TrimSpace(k.Embeddings) == "" {
		return "", "", nil
	}
	p, m, ok := strings.Cut(k.Embeddings, ":")
	if !ok || p == "" || m == "" {
		return "", "", fmt.Errorf("config: knowledge.embeddings %q is not PROVIDER:MODEL: give e.g. openai:text-embedding-3-small or ollama:nomic-embed-text, or leave it empty for the lexical index alone", k.Embeddings)
	}
	return p, m, nil
}

// PromptBudget is knowledge.prompt_tokens, or its default for 0.
func (k Knowledge) PromptBudget() int {
	if k.PromptTokens > 0 {
		return k.PromptTokens
	}
	return DefaultKnowledgePromptTokens
}

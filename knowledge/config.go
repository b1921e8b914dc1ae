package knowledge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/llm/provider"
	"github.com/saucerhq/saucer/strategy"
)

// FlagHelp is the --knowledge flag's help, the same for every command
// that runs agents.
const FlagHelp = "give the agents what `saucer learn` stored: auto (once the store has entries), on or off (default: knowledge.use, else auto)"

// FromConfig is the retriever a front end gives its agents, by mode (the
// flag's, else knowledge.use), from the store knowledge.store (a fleet's
// PostgreSQL) or knowledge.dir names: nil under off, and under auto while
// the store has no entries. Under auto a store that cannot be opened
// (another process holds it, a database that does not answer) is a
// warning on warn and the run goes on without; under on it is the error.
// close releases the store.
func FromConfig(ctx context.Context, cfg *config.Config, mode string, warn io.Writer) (r strategy.Retriever, close func(), err error) {
	noop := func() {}
	if mode == "" {
		if mode, err = cfg.Knowledge.UseMode(); err != nil {
			return nil, noop, err
		}
	} else if mode, err = (config.Knowledge{Use: mode}).UseMode(); err != nil {
		return nil, noop, fmt.Errorf("--knowledge: %w", err)
	}
	if mode == config.KnowledgeOff {
		return nil, noop, nil
	}
	where, err := cfg.KnowledgeStore("", nil)
	if err != nil {
		return nil, noop, err
	}
	if !config.IsPostgresURL(where) && !Exists(where) {
		if mode == config.KnowledgeOn {
			return nil, noop, fmt.Errorf("knowledge: the store %s has no entries: `saucer learn RUNS` fills it from recorded runs (or run with --knowledge off)", where)
		}
		return nil, noop, nil
	}
	emb, err := EmbedderFor(cfg)
	if err == nil {
		var store Store
		if store, err = OpenStore(ctx, where, &Options{Embedder: emb}); err == nil {
			// A fleet's database is known to have entries once opened.
			n, lerr := store.Len(ctx)
			switch {
			case lerr != nil:
				store.Close()
				err = lerr
			case n == 0:
				store.Close()
				if mode == config.KnowledgeOn {
					return nil, noop, fmt.Errorf("knowledge: the store %s has no entries: `saucer learn RUNS` fills it from recorded runs (or run with --knowledge off)", store.Name())
				}
				return nil, noop, nil
			default:
				return store.Retriever(cfg.Knowledge.PromptBudget()), func() { store.Close() }, nil
			}
		}
	}
	if mode == config.KnowledgeOn {
		return nil, noop, err
	}
	fmt.Fprintf(warn, "knowledge: warning: the agents go without what was learned: %v\n", err)
	return nil, noop, nil
}

// EmbedderFor builds the embedder knowledge.embeddings names, with its
// provider's settings; nil when none is set.
func EmbedderFor(cfg *config.Config) (Embedder, error) {
	name, model, err := cfg.Knowledge.EmbeddingsModel()
	if err != nil || name == "" {
		return nil, err
	}
	s := cfg.Providers[name]
	base, key := s.BaseURL, s.APIKey
	switch name {
	case "openai":
		if key == "" {
			key = os.Getenv("OPENAI_API_KEY")
		}
		if key == "" {
			return nil, errors.New("knowledge.embeddings uses openai but no API key is set: set providers.openai.api_key or OPENAI_API_KEY, or leave knowledge.embeddings empty")
		}
	case "ollama":
		if base == "" {
			base = provider.DefaultOllamaHost
		}
		if !strings.HasSuffix(strings.TrimRight(base, "/"), "/v1") {
			base = strings.TrimRight(base, "/") + "/v1"
		}
	default:
		if base == "" {
			return nil, fmt.Errorf("knowledge.embeddings uses %q, which has no base_url under providers: set providers.%s.base_url to its OpenAI-compatible endpoint", name, name)
		}
	}
	return NewOpenAIEmbedder(base, key, model, nil), nil
}

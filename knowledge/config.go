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
	"github.com/saucerhq/saucer/trajectory"
)

// FlagHelp is the --knowledge flag's help, the same for every command
// that runs agents.
const FlagHelp = "give the agents what `saucer learn` stored: auto (once the store has entries), on or off (default: knowledge.use, else auto)"

// Use is what a front end's runs make of the knowledge store: Retriever
// gives their agents what it holds (nil: nothing), and Learned adds a
// run's experience once it ends, when knowledge.learn is set.
type Use struct {
	Retriever strategy.Retriever
	store     Store
	learn     bool
	red       *trajectory.Redactor
}

// Learned learns the recorded run in dir into the store when
// knowledge.learn is set (else it does nothing): how many entries it
// added. A run that taught nothing (it did not end, it was cancelled)
// adds none and is no error.
func (u *Use) Learned(ctx context.Context, dir string) (int, error) {
	if u == nil || !u.learn || u.store == nil {
		return 0, nil
	}
	entries, err := LearnDir(ctx, dir, u.red, nil)
	var skip *SkipError
	if errors.As(err, &skip) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return len(entries), u.store.Add(ctx, entries...)
}

// Close releases the store.
func (u *Use) Close() {
	if u != nil && u.store != nil {
		u.store.Close()
	}
}

// FromConfig is what a front end's runs use of the store knowledge.store
// (a fleet's PostgreSQL) or knowledge.dir names. The agents are given its
// entries by mode (the flag's, else knowledge.use): none under off, and
// under auto none while the store has no entries. With knowledge.learn
// set, the store is opened (made, if need be) for the runs to be learned
// as they end, and under auto the agents are given what it holds as it
// fills. Under auto a store that cannot be opened (another process holds
// it, a database that does not answer) is a warning on warn and the runs
// go on without; under on it is the error.
func FromConfig(ctx context.Context, cfg *config.Config, mode string, warn io.Writer) (*Use, error) {
	var err error
	if mode == "" {
		if mode, err = cfg.Knowledge.UseMode(); err != nil {
			return nil, err
		}
	} else if mode, err = (config.Knowledge{Use: mode}).UseMode(); err != nil {
		return nil, fmt.Errorf("--knowledge: %w", err)
	}
	learn := cfg.Knowledge.Learn
	if mode == config.KnowledgeOff && !learn {
		return &Use{}, nil
	}
	where, err := cfg.KnowledgeStore("", nil)
	if err != nil {
		return nil, err
	}
	empty := func(name string) error {
		return fmt.Errorf("knowledge: the store %s has no entries: `saucer learn RUNS` fills it from recorded runs (or run with --knowledge off)", name)
	}
	if !learn && !config.IsPostgresURL(where) && !Exists(where) {
		if mode == config.KnowledgeOn {
			return nil, empty(where)
		}
		return &Use{}, nil
	}
	u := &Use{learn: learn}
	if learn {
		if u.red, err = trajectory.NewRedactor(cfg.Secrets(nil, nil), append(trajectory.DefaultPatterns(), cfg.Record.RedactPatterns...)); err != nil {
			return nil, fmt.Errorf("knowledge.learn: %w (check record.redact and record.redact_patterns)", err)
		}
	}
	emb, err := EmbedderFor(cfg)
	if err == nil {
		if u.store, err = OpenStore(ctx, where, &Options{Embedder: emb}); err == nil {
			// A fleet's database is known to have entries once opened.
			n, lerr := u.store.Len(ctx)
			switch {
			case lerr != nil:
				u.store.Close()
				u.store, err = nil, lerr
			case n == 0 && mode == config.KnowledgeOn:
				name := u.store.Name()
				u.Close()
				return nil, empty(name)
			case n == 0 && !learn:
				u.Close()
				return &Use{}, nil
			default:
				if mode != config.KnowledgeOff {
					u.Retriever = u.store.Retriever(cfg.Knowledge.PromptBudget())
				}
				return u, nil
			}
		}
	}
	if mode == config.KnowledgeOn {
		return nil, err
	}
	fmt.Fprintf(warn, "knowledge: warning: the runs go without what was learned, and teach nothing: %v\n", err)
	return &Use{}, nil
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

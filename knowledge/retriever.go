package knowledge

import (
	"context"
	"os"
	"path/filepath"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/strategy"
)

// Retriever is what the store gives agents (strategy.Retriever): the host
// agent the entries that fit its request, from any app; an app agent
// those that fit its subtask (with the request it serves) about its app.
// Each gets at most budget tokens, with every entry's source named.
func (s *DirStore) Retriever(budget int) strategy.Retriever { return retriever(s, budget) }

// retriever is every store's Retriever, over its ForPrompt.
func retriever(s Store, budget int) strategy.Retriever {
	return strategy.RetrieverFunc(func(ctx context.Context, q strategy.Query) (strategy.Retrieved, error) {
		text, used, err := s.ForPrompt(ctx, q.Text(), q.App, budget)
		if err != nil || text == "" {
			return strategy.Retrieved{}, err
		}
		r := strategy.Retrieved{Text: text, Sources: make([]string, len(used))}
		for i, src := range used {
			r.Sources[i] = src.String()
		}
		return r, nil
	})
}

// Exists reports whether dir holds a store with entries: what "auto"
// retrieval waits for (saucer learn makes one).
func Exists(dir string) bool {
	info, err := os.Stat(filepath.Join(dir, EntriesFile))
	return err == nil && info.Size() > 0
}

// OpenStore opens the store where names: a postgres:// (or
// postgresql://) URL is a PostgresStore, anything else a DirStore's
// directory.
func OpenStore(ctx context.Context, where string, opts *Options) (Store, error) {
	if config.IsPostgresURL(where) {
		return OpenPostgres(ctx, where, opts)
	}
	return Open(ctx, where, opts)
}

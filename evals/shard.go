package evals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Shard is one share of a suite's cases: Index from 1 to Count. The zero
// value is the whole suite.
type Shard struct {
	Index, Count int
}

// ParseShard reads "i/n" (1 ≤ i ≤ n).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("--shard %q: write i/n, e.g. 2/4 for the second of four shares", s)
	case n < 1:
		return Shard{}, fmt.Errorf("--shard %q: the number of shards must be at least 1", s)
	case i < 1 || i > n:
		return Shard{}, fmt.Errorf("--shard %q: shards count from 1 to %d (from a zero-based index such as Kubernetes' JOB_COMPLETION_INDEX, give $((JOB_COMPLETION_INDEX+1))/%d)", s, n, n)
	}
	return Shard{Index: i, Count: n}, nil
}

func (s Shard) String() string {
	if s.Count == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Has says whether the case at position k (from 0) of the selected cases
// falls in this shard. Cases are dealt round-robin in suite order, so the
// shares differ by at most one case and depend on nothing but the suite and
// the labels.
func (s Shard) Has(k int) bool {
	return s.Count <= 1 || k%s.Count == s.Index-1
}

// shardInfo is what a results directory records about its shard, so that
// Merge can check the shards make a whole run.
type shardInfo struct {
	Shard string `json:"shard"`
	// Cases are every selected case of the suite, in suite order; the
	// shard ran those that Shard.Has.
	Cases []string `json:"cases"`
}

// Merge joins the results directories of a sharded run (saucer eval
// --shard i/n, each shard once) into out: the trials' directories are
// copied, and the report is built as an unsharded run of the same suite
// and options would build it. The shards must come from the same suite
// and options, and together hold every shard once.
func Merge(dirs []string, out string) (*Report, error) {
	if len(dirs) == 0 {
		return nil, errors.New("merge: name the shards' results directories")
	}
	var first *runFile
	seen := map[int]string{}
	byCase := map[string]CaseReport{}
	for _, dir := range dirs {
		rf, err := readRunFile(dir)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if rf.Shard == nil {
			return nil, fmt.Errorf("merge: %s is not a shard's results (it was run without --shard)", dir)
		}
		sh, err := ParseShard(rf.Shard.Shard)
		if err != nil {
			return nil, fmt.Errorf("merge: %s: %w", dir, err)
		}
		if first == nil {
			first = rf
		} else {
			switch {
			case rf.Fingerprint != first.Fingerprint:
				return nil, fmt.Errorf("merge: %s holds another suite's results, or results run with other options, than %s", dir, dirs[0])
			case !slices.Equal(rf.Shard.Cases, first.Shard.Cases):
				return nil, fmt.Errorf("merge: %s selected other cases than %s", dir, dirs[0])
			}
			if f, _ := ParseShard(first.Shard.Shard); f.Count != sh.Count {
				return nil, fmt.Errorf("merge: %s is shard %s, but %s is one of %d shards", dir, sh, dirs[0], f.Count)
			}
		}
		if prev, dup := seen[sh.Index]; dup {
			return nil, fmt.Errorf("merge: %s and %s are both shard %s", prev, dir, sh)
		}
		seen[sh.Index] = dir
		rep, err := ReadReport(dir)
		if err != nil {
			return nil, fmt.Errorf("merge: %w (has the shard finished?)", err)
		}
		if rep.Metrics.Missing > 0 {
			return nil, fmt.Errorf("merge: shard %s (%s) did not finish: %d trials were not run; run it again on the same directory to resume", sh, dir, rep.Metrics.Missing)
		}
		for _, c := range rep.Cases {
			byCase[c.ID] = c
		}
		// Every case of the shard is there, with all its trials.
		for k, id := range rf.Shard.Cases {
			if !sh.Has(k) {
				continue
			}
			c, ok := byCase[id]
			if !ok {
				return nil, fmt.Errorf("merge: shard %s (%s) has no result for case %s", sh, dir, id)
			}
			for _, tr := range c.Trials {
				// A trial's folder holds what it wrote of its own; a trial
				// that replayed its recording exactly has none.
				src := filepath.Join(dir, "cases", id, fmt.Sprintf("trial-%d", tr.Trial))
				if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err := copyDir(src, filepath.Join(out, "cases", id, fmt.Sprintf("trial-%d", tr.Trial))); err != nil {
					return nil, fmt.Errorf("merge: %w", err)
				}
			}
		}
	}
	count, _ := ParseShard(first.Shard.Shard)
	var missing []string
	for i := 1; i <= count.Count; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, count.Count))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("merge: shard %s missing; give every shard's results directory", strings.Join(missing, ", "))
	}
	// The report of an unsharded run: the cases in suite order.
	s := &Suite{Name: first.Suite}
	results := map[string][]*TrialResult{}
	for _, id := range first.Shard.Cases {
		c := byCase[id]
		s.Cases = append(s.Cases, Case{ID: c.ID, Task: c.Task, ExpectFail: c.ExpectFail})
		results[id] = c.Trials
	}
	rep := BuildReport(s, results, nil)
	whole := *first
	whole.Shard = nil
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	if err := WriteJSON(filepath.Join(out, "run.json"), whole); err != nil {
		return nil, err
	}
	var trials bytes.Buffer
	for _, id := range first.Shard.Cases {
		for _, tr := range results[id] {
			b, err := json.Marshal(tr)
			if err != nil {
				return nil, err
			}
			trials.Write(append(b, '\n'))
		}
	}
	if err := os.WriteFile(filepath.Join(out, TrialsFile), trials.Bytes(), 0o644); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	return rep, WriteJSON(filepath.Join(out, "report.json"), rep)
}

func readRunFile(dir string) (*runFile, error) {
	p := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s is not a results directory: %w", dir, err)
	}
	var rf runFile
	if err := json.Unmarshal(b, &rf); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", p, err)
	}
	return &rf, nil
}

// copyDir copies a directory tree of regular files.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func (s *shardInfo) String() string {
	if s == nil {
		return "the whole suite"
	}
	return "shard " + s.Shard
}

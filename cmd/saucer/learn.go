package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/config"
	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/knowledge"
	"github.com/saucerhq/saucer/trajectory"
)

func init() { commands = append(commands, newLearnCmd) }

type learnFlags struct {
	dir      string
	store    string
	as       string
	helpDocs []string
	helpCmds []string
	psrs     []string
	requests []string
	search   string
	app      string
	kinds    []string
	limit    int
	budget   int
}

func newLearnCmd(g *globalFlags) *cobra.Command {
	f := &learnFlags{}
	cmd := &cobra.Command{
		Use:   "learn [RUNS...]",
		Short: "Learn from recorded runs and help documents, or search what was learned",
		Long: `learn keeps what agents can learn from in a knowledge store:

  saucer learn runs/20250102-030405-a1b2c3 runs/...   experience from recorded runs
  saucer learn runs                                   every run recorded under runs/
  saucer learn --as demonstration runs/ID             a run a person drove, as an example
  saucer learn --help-cmd tar="man tar" --help-cmd ls="ls --help"
  saucer learn --help-doc gimp=/usr/share/help/C/gimp/index.html
  saucer learn --psr save-note.zip --request "save a note as notes.txt in Notepad"
  saucer learn --search "count the lines of a csv" [--app shell]

Each run gives one entry for the whole run and one per app agent's subtask;
a failed run is kept as what not to do. A Windows Steps Recorder recording
(--psr, the .zip it saves, as UFO reads demonstrations) becomes a
demonstration titled with its --request; its screenshots are not kept.
Secrets (the config's and the environment's, record.redact) are removed
again from everything kept. The store is knowledge.store (a PostgreSQL
database a fleet of servers shares, postgres://USER:PASSWORD@HOST/DB) or
knowledge.dir (default: ~/.local/share/saucer/knowledge); --store and
--dir override them.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load()
			if err != nil {
				return err
			}
			return runLearn(cmd, cfg, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dir, "dir", "", "the knowledge store's directory (default: SAUCER_KNOWLEDGE, knowledge.store, knowledge.dir or ~/.local/share/saucer/knowledge)")
	fl.StringVar(&f.store, "store", "", "the knowledge store: a PostgreSQL URL (postgres://USER:PASSWORD@HOST/DB) that a fleet of servers shares, or a directory (default: as --dir)")
	fl.StringVar(&f.as, "as", "experience", "what recorded runs teach: experience or demonstration")
	fl.StringArrayVar(&f.helpDocs, "help-doc", nil, "index a help file for an app: APP=PATH (HTML, Markdown, XML or text; repeatable)")
	fl.StringArrayVar(&f.helpCmds, "help-cmd", nil, `index a command's help for an app: APP=COMMAND ("man tar", "ls --help"; repeatable)`)
	fl.StringArrayVar(&f.psrs, "psr", nil, "learn a demonstration from a Windows Steps Recorder recording (the .zip it saves, or its .mht); each --psr needs a --request (repeatable, in pairs)")
	fl.StringArrayVar(&f.requests, "request", nil, "with --psr: what the person did in the recording, in the order of the --psr files")
	fl.StringVar(&f.search, "search", "", "search the store for this request instead of learning")
	fl.StringVar(&f.app, "app", "", "with --search: only entries about this app")
	fl.StringSliceVar(&f.kinds, "kind", nil, "with --search: only these kinds (experience, demonstration, help)")
	fl.IntVar(&f.limit, "limit", 5, "with --search: at most this many hits")
	fl.IntVar(&f.budget, "budget", 0, "with --search: print what an agent would be given within this many tokens")
	return cmd
}

func runLearn(cmd *cobra.Command, cfg *config.Config, f *learnFlags, args []string) error {
	out := cmd.OutOrStdout()
	if f.search == "" && len(args) == 0 && len(f.helpDocs) == 0 && len(f.helpCmds) == 0 && len(f.psrs) == 0 && len(f.requests) == 0 {
		return errors.New("nothing to learn: give recorded runs (runs/<id>, or runs for all of them), --help-doc APP=PATH, --help-cmd APP=COMMAND, --psr FILE.zip --request TEXT, or --search TEXT")
	}
	if f.search != "" && (len(args) > 0 || len(f.helpDocs) > 0 || len(f.helpCmds) > 0 || len(f.psrs) > 0) {
		return errors.New("--search reads the store; learn and search in two commands")
	}
	if len(f.psrs) != len(f.requests) {
		return fmt.Errorf("--psr and --request come in pairs, and %d Steps Recorder file%s came with %d request%s: give each --psr FILE.zip a --request saying what the person did in it", len(f.psrs), plural(len(f.psrs)), len(f.requests), plural(len(f.requests)))
	}
	kind, err := knowledge.ParseKind(f.as)
	if err != nil || kind == knowledge.Help {
		return fmt.Errorf("--as %q: give experience or demonstration (help comes from --help-doc and --help-cmd)", f.as)
	}
	if f.store != "" && f.dir != "" {
		return errors.New("--store and --dir both name the store: give one")
	}
	where, err := cfg.KnowledgeStore(f.store+f.dir, nil)
	if err != nil {
		return err
	}
	emb, err := knowledge.EmbedderFor(cfg)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	store, err := knowledge.OpenStore(ctx, where, &knowledge.Options{Embedder: emb})
	if err != nil {
		return err
	}
	defer store.Close()

	if f.search != "" {
		return learnSearch(cmd, store, f)
	}

	// Everything is read before anything is stored: a bad argument
	// changes nothing.
	red, err := redactorFor(cfg)
	if err != nil {
		return err
	}
	runs, err := recordingsIn(args)
	if err != nil {
		return err
	}
	var learned []knowledge.Entry
	counts := map[string]int{}
	verdicts := trialVerdicts{}
	for _, run := range runs {
		// An eval trial's checks say whether its answer was right.
		verdict, err := verdicts.of(run)
		if err != nil {
			return err
		}
		es, err := knowledge.LearnDir(ctx, run, red, &knowledge.LearnOptions{Kind: kind, Verdict: verdict})
		var skip *knowledge.SkipError
		if errors.As(err, &skip) {
			fmt.Fprintf(out, "skipped %s: %s\n", run, skip.Reason)
			counts["skipped"]++
			continue
		}
		if err != nil {
			// One damaged recording among many does not stop the rest.
			fmt.Fprintf(out, "skipped %s: cannot read the recording: %v\n", run, err)
			counts["skipped"]++
			continue
		}
		subtasks := len(es) - 1
		fmt.Fprintf(out, "learned %s: %s, %s (%s, %d subtask%s)\n", run, es[0].Label(), oneLine(es[0].Title, 70), kind, subtasks, plural(subtasks))
		learned = append(learned, es...)
	}
	for _, spec := range f.helpDocs {
		app, path, ok := strings.Cut(spec, "=")
		if !ok || app == "" || path == "" {
			return fmt.Errorf("--help-doc %q: give APP=PATH, e.g. gimp=/usr/share/help/C/gimp/index.html", spec)
		}
		es, err := knowledge.HelpFromFile(app, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "help for %s from %s: %d passage%s\n", app, path, len(es), plural(len(es)))
		learned = append(learned, es...)
	}
	for _, spec := range f.helpCmds {
		app, command, ok := strings.Cut(spec, "=")
		if !ok || app == "" || strings.TrimSpace(command) == "" {
			return fmt.Errorf(`--help-cmd %q: give APP=COMMAND, e.g. tar="man tar" or ls="ls --help"`, spec)
		}
		es, err := knowledge.HelpFromCommand(ctx, app, command)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "help for %s from %q: %d passage%s\n", app, command, len(es), plural(len(es)))
		learned = append(learned, es...)
	}
	for i, file := range f.psrs {
		e, err := knowledge.DemonstrationFromPSR(file, f.requests[i], red)
		if err != nil {
			return err
		}
		in := ""
		if e.App != "" {
			in = " in " + e.App
		}
		fmt.Fprintf(out, "learned %s: %s, %s (Steps Recorder, %s%s)\n", file, e.Label(), oneLine(e.Title, 70), e.Source.Section, in)
		learned = append(learned, e)
	}
	if err := store.Add(ctx, learned...); err != nil {
		return err
	}
	for _, e := range learned {
		counts[string(e.Kind)]++
	}
	all, err := store.Entries(ctx)
	if err != nil {
		return err
	}
	byKind := map[knowledge.Kind]int{}
	for _, e := range all {
		byKind[e.Kind]++
	}
	fmt.Fprintf(out, "added %d entr%s (experience %d, demonstration %d, help %d; %d run%s skipped) to %s, which holds %d (experience %d, demonstration %d, help %d)\n",
		len(learned), pluralY(len(learned)), counts["experience"], counts["demonstration"], counts["help"], counts["skipped"], plural(counts["skipped"]),
		store.Name(), len(all), byKind[knowledge.Experience], byKind[knowledge.Demonstration], byKind[knowledge.Help])
	return nil
}

func learnSearch(cmd *cobra.Command, store knowledge.Store, f *learnFlags) error {
	out := cmd.OutOrStdout()
	if f.budget > 0 {
		text, _, err := store.ForPrompt(cmd.Context(), f.search, f.app, f.budget)
		if err != nil {
			return err
		}
		if text == "" {
			fmt.Fprintln(out, "nothing learned fits the request")
			return nil
		}
		fmt.Fprint(out, text)
		return nil
	}
	q := knowledge.Query{Text: f.search, App: f.app, Limit: f.limit}
	for _, k := range f.kinds {
		kind, err := knowledge.ParseKind(k)
		if err != nil {
			return fmt.Errorf("--kind: %w", err)
		}
		q.Kinds = append(q.Kinds, kind)
	}
	hits, err := store.Search(cmd.Context(), q)
	if err != nil {
		return err
	}
	if len(hits) == 0 {
		n, err := store.Len(cmd.Context())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "no entries of %s (%d) fit %q\n", store.Name(), n, f.search)
		return nil
	}
	for i, h := range hits {
		fmt.Fprintf(out, "%d. [%.4f] %s: %s\n", i+1, h.Score, h.Entry.Label(), oneLine(h.Entry.Title, 100))
		fmt.Fprintf(out, "   source: %s\n", h.Entry.Source)
		writeIndented(out, h.Entry.Text, 6)
	}
	return nil
}

// recordingsIn expands the arguments to run directories: a run directory,
// its trajectory.jsonl, or a directory of run directories (runs/).
func recordingsIn(args []string) ([]string, error) {
	var runs []string
	for _, a := range args {
		if filepath.Base(a) == trajectory.EventsFile {
			a = filepath.Dir(a)
		}
		abs, err := filepath.Abs(a)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(abs, trajectory.EventsFile)); err == nil {
			runs = append(runs, abs)
			continue
		}
		// Every recording below: runs/ holds one a directory, an eval's
		// results one a trial (cases/<id>/trial-<n>/trajectory).
		var found []string
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == trajectory.ArtifactsDir {
				return fs.SkipDir
			}
			if !d.IsDir() && d.Name() == trajectory.EventsFile {
				found = append(found, filepath.Dir(p))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w: give a recorded run's directory (runs/<id>) or a directory of them", a, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s holds no recording (no %s in it or anywhere below it): give a recorded run's directory (runs/<id>) or a directory of them", a, trajectory.EventsFile)
		}
		sort.Strings(found)
		runs = append(runs, found...)
	}
	return runs, nil
}

// trialVerdicts are the eval trials' verdicts by recording, read from the
// trials.jsonl of the results each recording is in (by results
// directory).
type trialVerdicts map[string]map[string]*knowledge.Verdict

// of is the verdict on the recording in run when run is an eval trial's
// (results/cases/<id>/trial-<n>/trajectory), else nil.
func (tv trialVerdicts) of(run string) (*knowledge.Verdict, error) {
	for dir, up := filepath.Dir(run), 0; up < 4; dir, up = filepath.Dir(dir), up+1 {
		byRun, ok := tv[dir]
		if !ok {
			var err error
			if byRun, err = readTrials(dir); err != nil {
				return nil, err
			}
			tv[dir] = byRun
		}
		if byRun != nil {
			return byRun[run], nil
		}
	}
	return nil, nil
}

// readTrials reads dir/trials.jsonl (evals.TrialsFile), nil when there is
// none.
func readTrials(dir string) (map[string]*knowledge.Verdict, error) {
	data, err := os.ReadFile(filepath.Join(dir, evals.TrialsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]*knowledge.Verdict{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var t evals.TrialResult
		if err := json.Unmarshal(line, &t); err != nil {
			return nil, fmt.Errorf("%s line %d: %w: the eval's results are damaged; learn from the runs alone by giving their directories", filepath.Join(dir, evals.TrialsFile), i+1, err)
		}
		if t.Trajectory == "" {
			continue
		}
		v := &knowledge.Verdict{Success: t.Success}
		for _, c := range t.Checks {
			if !c.Pass {
				v.Failed = append(v.Failed, c.Name)
			}
		}
		p := filepath.FromSlash(t.Trajectory)
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out[p] = v
	}
	return out, nil
}

func writeIndented(w io.Writer, text string, maxLines int) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i, l := range lines {
		if i == maxLines {
			fmt.Fprintf(w, "   … (%d more lines)\n", len(lines)-maxLines)
			break
		}
		fmt.Fprintf(w, "   %s\n", l)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

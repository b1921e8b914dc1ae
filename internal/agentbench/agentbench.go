// Package agentbench imports AgentBench's OS-interaction tasks as a Saucer
// eval suite, with AgentBench's own execution rules.
//
// The benchmark keeps its tasks in JSON files (a list of tasks, or one task
// object; JSON Lines too) under data/os_interaction/data/N/, and the
// scripts they name by file under scripts/N/ (the dev set: data/dev.json
// with scripts/dev/). A task has a description, create.init (scripts run
// before the agent, each on its own: code, a file, or a list of them, in
// bash or python), start (a script run in the agent's own shell), and an
// evaluation: match (the answer exactly, or a regex) or check (one script,
// or a list run in turn with the answer and the earlier outputs as
// arguments, where null stands for the task's example solution).
//
// Each task becomes a case in a sandbox of its own (root inside, /root as
// the working folder, as the benchmark's container) with one persistent
// shell (the agent's, as AgentBench's terminal), its init scripts as setup,
// its start script as start, and a check pipeline or an answer check. Tasks
// whose scripts touch system paths, accounts or the home folder are
// labelled needs-root and never run outside a sandbox; the others, no-root,
// are safe on the plain device too.
//
// The cases' model is the task's example solution played by a small model
// (Solution): run the example in the shell, answer with its output. Give
// --model to evaluate a real model instead.
package agentbench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/evals"
)

// ModelPrefix names the example-solution model of a case:
// "agentbench-example:<case id>", played from examples/<case id>.sh next
// to the suite.
const ModelPrefix = "agentbench-example:"

// Options say what to import.
type Options struct {
	// Paths are task files (.json, .jsonl) or folders searched for them
	// (the benchmark's data/os_interaction/data, or one data/N).
	Paths []string
	// Out is the folder the suite and the example solutions are written to.
	Out string
	// Scripts, when set, is the folder the tasks' script files are read
	// from. By default each file's own is found: scripts/N/ for a file in
	// data/N/, scripts/<file name>/ or scripts/ beside the file.
	Scripts string
	// PlainNoRoot runs the no-root tasks on the plain device (sandbox:
	// false on their cases), for hosts that cannot make sandboxes; the
	// needs-root ones still run only in a sandbox.
	PlainNoRoot bool
}

// Result says what Import wrote.
type Result struct {
	// Suite is the suite file written.
	Suite  string
	Tasks  int
	NoRoot int
	// CannotJudge are the cases labelled cannot-judge-here, which
	// Saucer's sandbox cannot judge; a warning says why for each.
	CannotJudge []string
	// Warnings are what the import could not carry over (a task without
	// an example solution, say).
	Warnings []string
}

// task is one entry of an AgentBench OS task file. Several fields come in
// more than one shape (a string, an object, a list), so they stay raw.
type task struct {
	Description *string         `json:"description"`
	Create      json.RawMessage `json:"create"`
	Start       json.RawMessage `json:"start"`
	Evaluation  *struct {
		Match   json.RawMessage `json:"match"`
		Check   json.RawMessage `json:"check"`
		Example json.RawMessage `json:"example"`
	} `json:"evaluation"`
	// Some tasks put the example next to the evaluation.
	Example json.RawMessage `json:"example"`
	Labels  []string        `json:"labels"`
}

// needsRoot matches scripts that touch what a plain device must not: system
// locations, the home folder (/root and /working in the benchmark's
// image), accounts, packages, other processes.
var needsRoot = regexp.MustCompile(`(?:^|[^\w./-])/(?:root|working|home|usr|etc|var|opt|srv|mnt|boot|sys)\b|/dev/(?:sd|nvme|loop)|~|\$HOME\b|\$\{HOME\}|\bcd\s*($|[;&|)])|` +
	`\b(?:useradd|userdel|usermod|adduser|deluser|groupadd|groupdel|groupmod|chpasswd|chown|chgrp|su|sudo|apt|apt-get|dpkg|pip3?\s+install|npm\s+(?:-g|install\s+-g)|systemctl|service|mount|umount|kill|pkill|killall|crontab|shutdown|reboot|iptables|setfacl)\b`)

// Import reads AgentBench OS task files with their scripts and writes one
// suite (agentbench-os-<name>.yaml) and the example solutions (examples/)
// into opts.Out.
func Import(opts Options) (*Result, error) {
	if len(opts.Paths) == 0 {
		return nil, errors.New("agentbench: name a task file (dev.json) or the benchmark's data folder")
	}
	if opts.Out == "" {
		return nil, errors.New("agentbench: no output folder")
	}
	files, err := taskFiles(opts.Paths)
	if err != nil {
		return nil, err
	}
	name := "agentbench-os"
	if len(files) == 1 {
		name += "-" + files[0].prefix
	}
	// Every task in a sandbox of its own, as root inside, in /root: the
	// benchmark's container.
	out := &evals.Suite{Name: name, Sandbox: true,
		Description: "AgentBench OS interaction tasks (Apache-2.0, THUDM/AgentBench), imported from " + describe(files) + ".",
		Defaults:    evals.Limits{MaxSteps: 8, MaxRounds: 4, Timeout: evals.Duration(2 * time.Minute)}}
	res := &Result{}
	examples := map[string]string{}
	seen := map[string]string{}
	for _, f := range files {
		tasks, err := readTasks(f.path)
		if err != nil {
			return nil, err
		}
		dirs := scriptDirs(f.path, opts.Scripts)
		for i, t := range tasks {
			id := fmt.Sprintf("%s-%03d", f.prefix, i)
			if prev, dup := seen[id]; dup {
				return nil, fmt.Errorf("agentbench: %s and %s both make case %s; import them separately", prev, f.path, id)
			}
			seen[id] = f.path
			c, example, warns, err := convert(t, id, dirs)
			if err != nil {
				return nil, fmt.Errorf("agentbench: %s, task %d: %w", f.path, i, err)
			}
			for _, w := range warns {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s (%s, task %d): %s", id, f.path, i, w))
			}
			if slices.Contains(c.Labels, CannotJudge) {
				res.CannotJudge = append(res.CannotJudge, id)
			}
			if example != nil {
				examples[id] = *example
			}
			if slices.Contains(c.Labels, "no-root") {
				res.NoRoot++
				if opts.PlainNoRoot {
					plain := false
					c.Device.Sandbox = &plain
				}
			}
			out.Cases = append(out.Cases, c)
		}
	}
	if len(out.Cases) == 0 {
		return nil, fmt.Errorf("agentbench: no tasks in %s", describe(files))
	}
	res.Tasks = len(out.Cases)
	if err := os.MkdirAll(filepath.Join(opts.Out, "examples"), 0o755); err != nil {
		return nil, err
	}
	for id, ex := range examples {
		if err := os.WriteFile(filepath.Join(opts.Out, "examples", id+".sh"), []byte(ex), 0o644); err != nil {
			return nil, err
		}
	}
	b, err := marshalSuite(out)
	if err != nil {
		return nil, err
	}
	header := "# Generated by `saucer eval import agentbench`: AgentBench OS tasks\n" +
		"# (https://github.com/THUDM/AgentBench, Apache License 2.0), each in a sandbox of its own.\n" +
		"# Cases labelled needs-root never run outside one. The model of every case plays the\n" +
		"# task's example solution (examples/<case>.sh) unless --model names another. Each case's\n" +
		"# answer_format is the rule its checker holds the answer to; cases labelled\n" +
		"# cannot-judge-here need what the sandbox refuses (the import's warnings say what).\n"
	res.Suite = filepath.Join(opts.Out, out.Name+".yaml")
	return res, os.WriteFile(res.Suite, append([]byte(header), b...), 0o644)
}

// marshalSuite writes the suite as YAML that reads back the same. Text
// that starts with a space or a newline becomes a block scalar with an
// indentation indicator, which yaml.v3 gets wrong at its default indent of
// 4 and right at 2; the suite is read back to make sure.
func marshalSuite(s *evals.Suite) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	back, err := evals.ParseSuite(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("agentbench: the suite written does not read back: %w", err)
	}
	if !reflect.DeepEqual(back.Cases, s.Cases) {
		return nil, errors.New("agentbench: the suite written reads back differently; please report this with the task file")
	}
	return b.Bytes(), nil
}

// taskFile is a task file and the prefix of its cases' ids.
type taskFile struct {
	path, prefix string
}

func describe(files []taskFile) string {
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(filepath.Dir(f.path))+"/"+filepath.Base(f.path))
	}
	if len(names) > 4 {
		return fmt.Sprintf("%s and %d more files", strings.Join(names[:4], ", "), len(names)-4)
	}
	return strings.Join(names, ", ")
}

// taskFiles lists the task files named or found in the folders named, in
// order. A file in the benchmark's data/N/ gets the prefix N-<name>, so
// data/5/new.json and data/6/new.json stay apart, as the benchmark keeps
// them (std-005-new-..., std-006-new-...).
func taskFiles(paths []string) ([]taskFile, error) {
	var out []taskFile
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("agentbench: %w", err)
		}
		if !fi.IsDir() {
			out = append(out, taskFile{path: p, prefix: prefix(p)})
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "scripts" {
				return filepath.SkipDir // script folders hold JSON too
			}
			if !d.IsDir() && (strings.HasSuffix(q, ".json") || strings.HasSuffix(q, ".jsonl")) {
				found = append(found, q)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("agentbench: %w", err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("agentbench: no task files (.json, .jsonl) in %s", p)
		}
		sort.Strings(found)
		for _, q := range found {
			out = append(out, taskFile{path: q, prefix: prefix(q)})
		}
	}
	return out, nil
}

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func prefix(file string) string {
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".json"), ".jsonl")
	dir := filepath.Dir(file)
	if filepath.Base(filepath.Dir(dir)) == "data" {
		name = filepath.Base(dir) + "-" + name
	}
	name = idUnsafe.ReplaceAllString(name, "-")
	if name == "" || !regexp.MustCompile(`^[A-Za-z0-9]`).MatchString(name) {
		name = "t" + name
	}
	return name
}

// scriptDirs are the folders a file's scripts may be in, most specific
// first: the one named, or scripts/N/ for a file in data/N/ (the
// benchmark's layout), scripts/<name>/ beside the file or its data folder
// (the dev set's), and scripts/ beside the file.
func scriptDirs(file, named string) []string {
	if named != "" {
		return []string{named}
	}
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".json"), ".jsonl")
	dir := filepath.Dir(file)
	var dirs []string
	if parent := filepath.Dir(dir); filepath.Base(parent) == "data" {
		dirs = append(dirs, filepath.Join(filepath.Dir(parent), "scripts", filepath.Base(dir)))
	}
	if filepath.Base(dir) == "data" {
		dirs = append(dirs, filepath.Join(filepath.Dir(dir), "scripts", name))
	}
	return append(dirs, filepath.Join(dir, "scripts", name), filepath.Join(dir, "scripts"))
}

// readTasks reads a list of tasks, one task object, or JSON Lines.
func readTasks(file string) ([]task, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("agentbench: %w", err)
	}
	var tasks []task
	if strings.HasSuffix(file, ".jsonl") {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 16<<20)
		for n := 1; sc.Scan(); n++ {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var t task
			if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
				return nil, fmt.Errorf("agentbench: %s line %d is not an OS task: %w", file, n, err)
			}
			tasks = append(tasks, t)
		}
		return tasks, sc.Err()
	}
	trimmed := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(trimmed, []byte("[")):
		err = json.Unmarshal(trimmed, &tasks)
	case bytes.HasPrefix(trimmed, []byte("{")):
		var t task
		err = json.Unmarshal(trimmed, &t)
		tasks = []task{t}
	default:
		err = errors.New("it holds neither a list of tasks nor a task object")
	}
	if err != nil {
		return nil, fmt.Errorf("agentbench: %s is not an OS task file: %w", file, err)
	}
	return tasks, nil
}

// convert turns one task into a case, its example solution (nil when the
// task has none) and warnings.
func convert(t task, id string, dirs []string) (c evals.Case, example *string, warns []string, err error) {
	if t.Description == nil || strings.TrimSpace(*t.Description) == "" {
		return c, nil, nil, errors.New("the task has no description")
	}
	if t.Evaluation == nil {
		return c, nil, nil, errors.New("the task has no evaluation")
	}
	c = evals.Case{ID: id, Task: *t.Description, Model: ModelPrefix + id, Labels: append([]string{}, t.Labels...)}
	c.Device.PersistentShell = true // the agent's shell is one terminal, as in the benchmark
	var all []string                // every script's text, to decide whether root is needed
	var scripts []placed            // every script and where it runs, to decide whether it can be judged
	// create: {"init": script | [script, ...], "image": ...}; a create
	// that is not an object carries nothing to run (the benchmark skips it).
	var create struct {
		Init  json.RawMessage `json:"init"`
		Image string          `json:"image"`
	}
	if len(t.Create) > 0 && t.Create[0] == '{' {
		if err := json.Unmarshal(t.Create, &create); err != nil {
			return c, nil, nil, fmt.Errorf("create: %w", err)
		}
	}
	if len(create.Init) > 0 && string(create.Init) != "null" {
		var list []json.RawMessage
		if create.Init[0] != '[' || json.Unmarshal(create.Init, &list) != nil {
			list = []json.RawMessage{create.Init}
		}
		for j, raw := range list {
			s, err := script(raw, dirs)
			if err != nil {
				return c, nil, nil, fmt.Errorf("create.init %d: %w", j+1, err)
			}
			if s == nil || strings.TrimSpace(s.Code) == "" {
				continue // nothing to run
			}
			c.Device.Setup = append(c.Device.Setup, evals.SetupStep{Script: *s})
			all = append(all, s.Code)
			scripts = append(scripts, placed{what: fmt.Sprintf("create.init %d", j+1), script: *s})
		}
	}
	if create.Image != "" {
		c.Labels = append(c.Labels, "image:"+create.Image)
	}
	if len(t.Start) > 0 {
		s, err := script(t.Start, dirs)
		if err != nil {
			return c, nil, nil, fmt.Errorf("start: %w", err)
		}
		if s != nil {
			// The benchmark types the code into its terminal, whatever
			// the language says.
			c.Device.Start = s.Code
			all = append(all, s.Code)
			scripts = append(scripts, placed{what: startScript, script: evals.Script{Code: s.Code}, agentShell: true})
		}
	}
	ev := t.Evaluation
	exRaw := ev.Example
	if len(exRaw) == 0 {
		exRaw = t.Example
	}
	ex, err := script(exRaw, dirs)
	if err != nil {
		return c, nil, nil, fmt.Errorf("example: %w", err)
	}
	if ex != nil {
		all = append(all, ex.Code)
		scripts = append(scripts, placed{what: "the example solution (in the agent's shell)", script: *ex, agentShell: true})
		sh := ex.Code
		if ex.Language == evals.LangPython {
			sh = "python3 -c " + shellQuote(ex.Code)
		}
		example = &sh
	} else {
		warns = append(warns, "the task has no example solution: its case needs --model")
	}
	switch {
	case len(ev.Match) > 0 && string(ev.Match) != "null":
		a, err := matchCheck(ev.Match)
		if err != nil {
			return c, nil, nil, fmt.Errorf("evaluation.match: %w", err)
		}
		c.Checks = append(c.Checks, evals.Check{Name: "agentbench match", Answer: a})
		c.AnswerFormat = matchFormat(a)
	case len(ev.Check) > 0 && string(ev.Check) != "null":
		var steps []json.RawMessage
		if ev.Check[0] != '[' || json.Unmarshal(ev.Check, &steps) != nil {
			steps = []json.RawMessage{ev.Check}
		}
		var pipe []evals.Script
		for j, raw := range steps {
			s, err := script(raw, dirs)
			if err != nil {
				return c, nil, nil, fmt.Errorf("evaluation.check %d: %w", j+1, err)
			}
			what := fmt.Sprintf("evaluation.check %d", j+1)
			if s == nil { // null: the example solution gives the expected output
				if ex == nil {
					return c, nil, nil, fmt.Errorf("evaluation.check %d is null, which stands for the example solution, but the task has none", j+1)
				}
				s, what = ex, fmt.Sprintf("evaluation.check %d (the example solution, run for the expected output)", j+1)
			}
			if strings.TrimSpace(s.Code) == "" {
				return c, nil, nil, fmt.Errorf("evaluation.check %d is an empty script", j+1)
			}
			pipe = append(pipe, *s)
			all = append(all, s.Code)
			scripts = append(scripts, placed{what: what, script: *s})
		}
		c.Checks = append(c.Checks, evals.Check{Name: "agentbench check", State: &evals.StateCheck{Pipeline: pipe}})
		c.AnswerFormat = pipelineFormat(pipe)
	default:
		return c, nil, nil, errors.New("the evaluation has neither match nor check")
	}
	label := "no-root"
	for _, s := range all {
		if needsRoot.MatchString(s) {
			label = evals.NeedsRoot
		}
	}
	c.Labels = append(c.Labels, label)
	if why := cannotJudge(scripts); len(why) > 0 {
		c.Labels = append(c.Labels, CannotJudge)
		warns = append(warns, "cannot be judged in Saucer's sandbox (label "+CannotJudge+"): "+strings.Join(why, "; "))
	}
	return c, example, warns, nil
}

// matchCheck reads evaluation.match: the answer as text (compared
// stripped), {"answer": ..., "strip": ...} or {"regex": ...} (searched in
// the answer, as Python's re.search does).
func matchCheck(raw json.RawMessage) (*evals.AnswerCheck, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return &evals.AnswerCheck{Exact: &text}, nil
	}
	var obj struct {
		Answer *string `json:"answer"`
		Regex  *string `json:"regex"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("write the answer as text, {\"answer\": ...} or {\"regex\": ...}: %w", err)
	}
	switch {
	case obj.Answer != nil:
		return &evals.AnswerCheck{Exact: obj.Answer}, nil
	case obj.Regex != nil:
		if _, err := regexp.Compile(*obj.Regex); err != nil {
			return nil, fmt.Errorf("the regex %q is not one Go's regexp package reads (RE2 syntax): %w", *obj.Regex, err)
		}
		if *obj.Regex == "" {
			return nil, errors.New("the regex is empty: it would match any answer")
		}
		return &evals.AnswerCheck{Regex: *obj.Regex}, nil
	}
	return nil, fmt.Errorf("%s has neither answer nor regex", raw)
}

// script reads a script given as text (bash), or as {"language": ...,
// "code": ...} or {"language": ..., "file": ...} with the file in one of
// dirs. It returns nil for null.
func script(raw json.RawMessage, dirs []string) (*evals.Script, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &evals.Script{Code: s}, nil
	}
	var obj struct {
		Language string  `json:"language"`
		Code     *string `json:"code"`
		File     string  `json:"file"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("a script must be text, {code} or {file}: %w", err)
	}
	out := &evals.Script{}
	switch obj.Language {
	case "", "bash":
	case "python":
		out.Language = evals.LangPython
	default:
		return nil, fmt.Errorf("script language %q is not supported (bash and python are)", obj.Language)
	}
	switch {
	case obj.File != "":
		var tried []string
		for _, d := range dirs {
			p := filepath.Join(d, filepath.FromSlash(obj.File))
			b, err := os.ReadFile(p)
			if err == nil {
				out.Code = string(b)
				return out, nil
			}
			tried = append(tried, p)
		}
		return nil, fmt.Errorf("script file %s is not in %s; name the scripts folder with --scripts", obj.File, strings.Join(tried, ", "))
	case obj.Code != nil:
		out.Code = *obj.Code
		return out, nil
	}
	return nil, fmt.Errorf("a script object needs code or file: %s", raw)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/trajectory"
)

// Recorded runs (Options.RunsDir: every served task's recording and
// saucer run's) and eval reports (Options.EvalsDir) through the API, for
// review: a run's steps with their screenshots, its replay against the
// recording, an eval's report files and the comparison of two.

// ErrNotFound: no such run, artifact or eval report.
var ErrNotFound = errors.New("not found")

// RunSummary is a recorded run in a list.
type RunSummary struct {
	ID        string     `json:"id"`
	Task      string     `json:"task"`
	Model     string     `json:"model"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Status is how the session ended (FINISH, FAIL, ...), empty when the
	// recording has no end (still running, or cut short).
	Status string `json:"status,omitempty"`
	Answer string `json:"answer,omitempty"`
}

// RunInfo is a recorded run as the console walks it.
type RunInfo struct {
	RunSummary
	Mode    string              `json:"mode,omitempty"`
	Version string              `json:"version,omitempty"`
	Device  *command.DeviceInfo `json:"device,omitempty"`
	Apps    map[string]string   `json:"apps,omitempty"`
	Error   string              `json:"error,omitempty"`
	// ModelCalls counts its model calls, Usage their tokens. Cost and
	// CostUSD are what the recording's end says they cost (see TaskInfo);
	// empty when the recording has no end, or was made before costs were
	// recorded: the console then says "cost unknown".
	ModelCalls int        `json:"model_calls"`
	Usage      llm.Usage  `json:"usage"`
	Cost       string     `json:"cost,omitempty"`
	CostUSD    *float64   `json:"cost_usd,omitempty"`
	Steps      []StepInfo `json:"steps"`
}

// ReplayInfo is how a replay of a recorded run went: the model answered
// with the recorded replies and the device with the recorded results,
// each request and command checked against the recording.
type ReplayInfo struct {
	Status string `json:"status"`
	Answer string `json:"answer"`
	// Identical says the replay did what the recording did, and ended
	// the same way.
	Identical bool `json:"identical"`
	// Diff says where it diverged, as saucer replay prints it.
	Diff       string `json:"diff,omitempty"`
	ModelCalls int    `json:"model_calls"`
	Dispatches int    `json:"dispatches"`
}

// Review replays recorded runs and reads eval reports for the API. It is
// an interface so that the server stays below package evals, which knows
// how (serve.Review is the one Saucer uses).
type Review interface {
	// Replay runs a recording again offline, the model answering with
	// the recorded replies and the device with the recorded results: how
	// the replay ended, and where it diverged from the recording, as
	// saucer replay prints it ("" when it did not).
	Replay(ctx context.Context, tr *trajectory.Trajectory) (status, answer, diff string, err error)
	// ReadEval reads the report of an eval results directory.
	ReadEval(dir string) (EvalReport, error)
	// CompareEvals compares the reports of two results directories, B
	// against A: the comparison as a JSON object, and as text.
	CompareEvals(dirA, dirB string) (comparison any, text string, err error)
}

// EvalReport is what the API lists of an eval's report.
type EvalReport struct {
	Suite       string
	Cases       int
	Trials      int
	SuccessRate float64
}

// errNoReview: the server was built without a Review.
var errNoReview = fmt.Errorf("%w: this server does not replay runs or read eval reports (server.Options.Review is not set; serve.Start sets it)", ErrNotFound)

// EvalSummary is an eval results directory.
type EvalSummary struct {
	Name        string    `json:"name"`
	Suite       string    `json:"suite"`
	Cases       int       `json:"cases"`
	Trials      int       `json:"trials"`
	SuccessRate float64   `json:"success_rate"`
	ModifiedAt  time.Time `json:"modified_at"`
	// Files are the report files it has (report.html, report.md, ...).
	Files []string `json:"files"`
}

// runDir is a run's directory, or an error that says why there is none.
func (s *Server) runDir(id string) (string, error) {
	if s.opts.RunsDir == "" {
		return "", fmt.Errorf("%w: this server serves no recordings (saucer serve records into its runs directory; record.enabled)", ErrNotFound)
	}
	if !safeName(id) {
		return "", fmt.Errorf("%w: %q is not a run id", ErrBadRequest, id)
	}
	dir := filepath.Join(s.opts.RunsDir, id)
	if _, err := os.Stat(filepath.Join(dir, trajectory.EventsFile)); err != nil {
		return "", fmt.Errorf("%w: no recorded run %q in %s", ErrNotFound, id, s.opts.RunsDir)
	}
	return dir, nil
}

// listRuns answers GET /api/runs: the newest recorded runs first
// (?limit=, 200 by default).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	limit := 200
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			writeError(w, fmt.Errorf("%w: limit=%q is not a positive number", ErrBadRequest, v))
			return
		}
		limit = n
	}
	runs := []RunSummary{}
	if s.opts.RunsDir != "" {
		entries, err := os.ReadDir(s.opts.RunsDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			writeError(w, err)
			return
		}
		type dated struct {
			name string
			mod  time.Time
		}
		var dirs []dated
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			fi, err := os.Stat(filepath.Join(s.opts.RunsDir, e.Name(), trajectory.EventsFile))
			if err == nil {
				dirs = append(dirs, dated{e.Name(), fi.ModTime()})
			}
		}
		sort.Slice(dirs, func(i, j int) bool { return dirs[i].mod.After(dirs[j].mod) })
		for _, d := range dirs[:min(limit, len(dirs))] {
			if sum, ok := readRunSummary(filepath.Join(s.opts.RunsDir, d.name)); ok {
				sum.ID = d.name
				runs = append(runs, sum)
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": runs})
}

// readRunSummary reads a recording's first line and, from its tail, its
// last: the session's start and end, without reading the rest.
func readRunSummary(dir string) (RunSummary, bool) {
	f, err := os.Open(filepath.Join(dir, trajectory.EventsFile))
	if err != nil {
		return RunSummary{}, false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	first, err := br.ReadBytes('\n')
	if err != nil && len(first) == 0 {
		return RunSummary{}, false
	}
	var start trajectory.Event
	if json.Unmarshal(first, &start) != nil || start.Session == nil {
		return RunSummary{}, false
	}
	sum := RunSummary{Task: start.Session.Task, Model: start.Session.Model, StartedAt: start.Time}
	if fi, err := f.Stat(); err == nil {
		const tail = 256 << 10
		off := max(fi.Size()-tail, 0)
		buf := make([]byte, fi.Size()-off)
		if _, err := f.ReadAt(buf, off); err == nil || errors.Is(err, io.EOF) {
			lines := bytes.Split(bytes.TrimRight(buf, "\n"), []byte("\n"))
			var end trajectory.Event
			if json.Unmarshal(lines[len(lines)-1], &end) == nil && end.Type == trajectory.TypeSessionEnd && end.End != nil {
				t := end.Time
				sum.EndedAt, sum.Status, sum.Answer = &t, end.End.Status, cut(end.End.Answer, cutCall)
			}
		}
	}
	return sum, true
}

// getRun answers GET /api/runs/{id}: the run's session and its steps,
// each with its commands, results, tokens and screenshot.
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	dir, err := s.runDir(id)
	if err != nil {
		writeError(w, err)
		return
	}
	tr, err := trajectory.Read(dir)
	if err != nil {
		writeError(w, fmt.Errorf("run %s cannot be read: %w", id, err))
		return
	}
	writeJSON(w, http.StatusOK, runInfo(id, dir, tr))
}

// runInfo builds a run's view from its recording, as the live task shows
// its steps.
func runInfo(id, dir string, tr *trajectory.Trajectory) RunInfo {
	info := RunInfo{RunSummary: RunSummary{ID: id}, Steps: []StepInfo{}}
	if ss := tr.Session(); ss != nil {
		info.Task, info.Model, info.Mode, info.Version, info.Device, info.Apps = ss.Task, ss.Model, ss.Mode, ss.Version, ss.Device, ss.Apps
	}
	if len(tr.Events) > 0 {
		info.StartedAt = tr.Events[0].Time
	}
	if end := tr.End(); end != nil {
		t := tr.Events[len(tr.Events)-1].Time
		info.EndedAt, info.Status, info.Answer, info.Error = &t, end.Status, end.Answer, end.Error
		info.Cost, info.CostUSD = end.Cost, end.CostUSD
	}
	lastShot := map[string]*shotData{}
	for _, e := range tr.Events {
		switch e.Type {
		case trajectory.TypeModelCall:
			if e.Call == nil {
				continue
			}
			if shot := lastImage(e.Call.Request.Messages); shot != nil {
				lastShot[e.Agent] = shot
			}
			if resp := e.Call.Response; resp != nil {
				info.ModelCalls++
				info.Usage = info.Usage.Add(resp.Usage)
			}
		case trajectory.TypeStep:
			st := StepInfo{N: len(info.Steps) + 1, Agent: e.Agent, Round: e.Round, Step: e.Step, Status: e.Status,
				Commands: len(e.Commands), DurationMS: int64(e.DurationMS), Usage: e.Usage}
			if d := e.Decision; d != nil {
				st.Thought, st.Result = d.Thought, cut(d.Result, cutOutput)
				if st.Status == "" {
					st.Status = d.Status
				}
			}
			errs := e.Errors
			if e.Error != "" {
				errs = append(errs, e.Error)
			}
			st.Error = strings.Join(errs, "; ")
			for i, c := range e.Commands {
				a := ActionInfo{CallID: c.CallID, Tool: c.ToolName, Namespace: c.Namespace, Call: cut(callLine(c), cutCall)}
				if i < len(e.Results) {
					res := e.Results[i]
					a.Status = string(res.Status)
					if res.OK() {
						a.Output = cut(resultText(res), cutOutput)
					} else {
						a.Error, st.Failed = cut(res.Error, cutOutput), st.Failed+1
					}
				}
				st.Actions = append(st.Actions, a)
			}
			if shot := lastShot[e.Agent]; shot != nil {
				delete(lastShot, e.Agent)
				w, h := pngSize(shot.data)
				sc := &Screenshot{SHA256: shot.sha, MediaType: shot.mediaType, Width: w, Height: h}
				sc.X, sc.Y, sc.Clicked = command.Point(e.Commands, e.Results)
				if matches, _ := filepath.Glob(filepath.Join(dir, trajectory.ArtifactsDir, shot.sha+".*")); len(matches) > 0 {
					sc.URL = "/api/runs/" + id + "/artifacts/" + filepath.Base(matches[0])
				} else {
					// Small enough to have stayed in the line: inline.
					sc.URL = "data:" + shot.mediaType + ";base64," + base64Of(shot.data)
				}
				st.Screenshot = sc
			}
			info.Steps = append(info.Steps, st)
		}
	}
	return info
}

var artifactName = regexp.MustCompile(`^[0-9a-f]{64}\.[a-z0-9]{1,8}$`)

// runArtifact answers GET /api/runs/{id}/artifacts/{name}.
func (s *Server) runArtifact(w http.ResponseWriter, r *http.Request) {
	dir, err := s.runDir(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	name := r.PathValue("name")
	if !artifactName.MatchString(name) {
		writeError(w, fmt.Errorf("%w: %q is not an artifact's name (SHA256.EXT)", ErrBadRequest, name))
		return
	}
	path := filepath.Join(dir, trajectory.ArtifactsDir, name)
	if _, err := os.Stat(path); err != nil {
		writeError(w, fmt.Errorf("%w: run %s has no artifact %s", ErrNotFound, r.PathValue("id"), name))
		return
	}
	w.Header().Set("Cache-Control", "private, max-age=86400, immutable")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeFile(w, r, path)
}

// replayRun answers POST /api/runs/{id}/replay: the run replayed offline
// (recorded replies, recorded device), and where it diverged. One replay
// runs at a time.
func (s *Server) replayRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	dir, err := s.runDir(id)
	if err != nil {
		writeError(w, err)
		return
	}
	select {
	case s.replays <- struct{}{}:
		defer func() { <-s.replays }()
	default:
		writeError(w, fmt.Errorf("%w: a replay is running; try again when it is done", ErrBusy))
		return
	}
	if s.opts.Review == nil {
		writeError(w, errNoReview)
		return
	}
	tr, err := trajectory.Read(dir)
	if err != nil {
		writeError(w, fmt.Errorf("run %s cannot be read: %w", id, err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	status, answer, diff, err := s.opts.Review.Replay(ctx, tr)
	if err != nil {
		writeError(w, fmt.Errorf("%w: run %s cannot be replayed: %v", ErrBadRequest, id, err))
		return
	}
	info := ReplayInfo{Status: status, Answer: answer, Diff: diff,
		ModelCalls: len(tr.Calls()), Dispatches: len(tr.Of(trajectory.TypeDispatch))}
	if end := tr.End(); end != nil && (end.Status != info.Status || end.Answer != info.Answer) {
		info.Diff += fmt.Sprintf("the recording ended %s %q, the replay %s %q\n", end.Status, end.Answer, info.Status, info.Answer)
	}
	info.Identical = info.Diff == ""
	writeJSON(w, http.StatusOK, info)
}

// evalDirs are the eval results directories: EvalsDir itself when it is
// one, and its subdirectories that are, by name ("." for itself).
func (s *Server) evalDirs() map[string]string {
	out := map[string]string{}
	root := s.opts.EvalsDir
	if root == "" {
		return out
	}
	if _, err := os.Stat(filepath.Join(root, "report.json")); err == nil {
		out["."] = root
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(root, e.Name(), "report.json")); err == nil {
				out[e.Name()] = filepath.Join(root, e.Name())
			}
		}
	}
	return out
}

// reportFiles are the files of a results directory the API serves.
var reportFiles = []string{"report.html", "report.md", "report.json", "junit.xml"}

// listEvals answers GET /api/evals.
func (s *Server) listEvals(w http.ResponseWriter, r *http.Request) {
	dirs := s.evalDirs()
	if len(dirs) > 0 && s.opts.Review == nil {
		writeError(w, errNoReview)
		return
	}
	list := []EvalSummary{}
	for _, name := range slices.Sorted(maps.Keys(dirs)) {
		dir := dirs[name]
		rep, err := s.opts.Review.ReadEval(dir)
		if err != nil {
			continue
		}
		sum := EvalSummary{Name: name, Suite: rep.Suite, Cases: rep.Cases, Trials: rep.Trials, SuccessRate: rep.SuccessRate,
			Files: []string{}}
		if fi, err := os.Stat(filepath.Join(dir, "report.json")); err == nil {
			sum.ModifiedAt = fi.ModTime().UTC()
		}
		for _, f := range reportFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				sum.Files = append(sum.Files, f)
			}
		}
		list = append(list, sum)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].ModifiedAt.After(list[j].ModifiedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"evals": list})
}

// evalFile answers GET /api/evals/{name}/{file}: a report file. The HTML
// report runs sandboxed: its script walks the trajectories, and it may
// not call the API.
func (s *Server) evalFile(w http.ResponseWriter, r *http.Request) {
	name, file := r.PathValue("name"), r.PathValue("file")
	dir, ok := s.evalDirs()[name]
	switch {
	case !ok:
		writeError(w, fmt.Errorf("%w: no eval results %q (GET /api/evals lists them)", ErrNotFound, name))
		return
	case !slices.Contains(reportFiles, file):
		writeError(w, fmt.Errorf("%w: %q is not a report file (%s)", ErrNotFound, file, strings.Join(reportFiles, ", ")))
		return
	}
	path := filepath.Join(dir, file)
	if _, err := os.Stat(path); err != nil {
		writeError(w, fmt.Errorf("%w: eval %s has no %s", ErrNotFound, name, file))
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if strings.HasSuffix(file, ".html") {
		w.Header().Set("Content-Security-Policy", "sandbox allow-scripts; default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
	}
	if strings.HasSuffix(file, ".md") {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	http.ServeFile(w, r, path)
}

// compareEvals answers GET /api/evals/compare?a=&b=: how B differs from
// A, as a JSON object, and in "text" the same as saucer eval compare
// prints it.
func (s *Server) compareEvals(w http.ResponseWriter, r *http.Request) {
	if s.opts.Review == nil {
		writeError(w, errNoReview)
		return
	}
	dirs := s.evalDirs()
	var pair [2]string
	for i, k := range []string{"a", "b"} {
		name := r.URL.Query().Get(k)
		dir, ok := dirs[name]
		if !ok {
			writeError(w, fmt.Errorf("%w: %s=%q names no eval results (GET /api/evals lists them)", ErrNotFound, k, name))
			return
		}
		pair[i] = dir
	}
	c, text, err := s.opts.Review.CompareEvals(pair[0], pair[1])
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		writeError(w, err)
		return
	}
	obj := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &obj); err != nil {
		writeError(w, fmt.Errorf("an eval comparison must be a JSON object: %w", err))
		return
	}
	obj["text"], _ = json.Marshal(text)
	writeJSON(w, http.StatusOK, obj)
}

func base64Of(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

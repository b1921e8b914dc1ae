package evals

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/saucerhq/saucer/llm/price"
)

// Report is a suite run's results and metrics (report.json).
type Report struct {
	Suite string       `json:"suite"`
	Cases []CaseReport `json:"cases"`
	// Metrics are over every trial of every case.
	Metrics Metrics `json:"metrics"`
}

// CaseReport is one case's trials and metrics.
type CaseReport struct {
	ID         string         `json:"id"`
	Task       string         `json:"task"`
	ExpectFail bool           `json:"expect_fail,omitempty"`
	Trials     []*TrialResult `json:"trials"`
	Successes  int            `json:"successes"`
	// PassAtK and PassHatK are by k, from 1 to the number of trials.
	PassAtK  map[int]float64 `json:"pass_at_k"`
	PassHatK map[int]float64 `json:"pass_hat_k"`
}

// Metrics summarize trials.
type Metrics struct {
	Cases  int `json:"cases"`
	Trials int `json:"trials"`
	// Missing counts trials not run (an interrupted run).
	Missing     int     `json:"missing,omitempty"`
	Successes   int     `json:"successes"`
	SuccessRate float64 `json:"success_rate"`
	// PassAtK and PassHatK average the cases' estimates over the cases
	// with at least k trials.
	PassAtK  map[int]float64 `json:"pass_at_k"`
	PassHatK map[int]float64 `json:"pass_hat_k"`
	// StepSuccess is the share of app-agent steps whose commands all
	// succeeded.
	StepSuccess float64 `json:"step_success"`
	MeanSteps   float64 `json:"mean_steps"`
	// MeanModelCalls is the mean of the trials' model calls (re-asks and
	// retries count; a judge's do not).
	MeanModelCalls float64 `json:"mean_model_calls"`
	Tokens         Tokens  `json:"tokens"`
	// CostUSD is nil when any trial's price is unknown; UnknownPrices
	// names those models and KnownCostUSD sums what is known.
	// CostEstimated says some trial's cost was priced from Saucer's own
	// token count (its provider reported no usage).
	CostUSD       *float64 `json:"cost_usd"`
	KnownCostUSD  float64  `json:"known_cost_usd"`
	UnknownPrices []string `json:"unknown_prices,omitempty"`
	CostEstimated bool     `json:"cost_estimated,omitempty"`
	// WallMS sums the trials' wall time; PhaseMS splits it by phase.
	WallMS  float64            `json:"wall_ms"`
	PhaseMS map[string]float64 `json:"phase_ms"`
	// Failures counts failed trials by category.
	Failures map[string]int `json:"failures"`
}

// Tokens are token totals; Estimated says some were counted by Saucer
// because a provider reported none.
type Tokens struct {
	Prompt     int  `json:"prompt"`
	Completion int  `json:"completion"`
	Cached     int  `json:"cached"`
	Total      int  `json:"total"`
	Estimated  bool `json:"estimated,omitempty"`
}

// BuildReport computes the metrics from the trial results, by case id in
// suite order; nil entries are trials not run.
func BuildReport(s *Suite, results map[string][]*TrialResult, prices Prices) *Report {
	rep := &Report{Suite: s.Name}
	m := &rep.Metrics
	m.PassAtK, m.PassHatK, m.PhaseMS, m.Failures = map[int]float64{}, map[int]float64{}, map[string]float64{}, map[string]int{}
	atK, hatK, counted := map[int]float64{}, map[int]float64{}, map[int]int{}
	var appSteps, okSteps, steps, calls int
	unknown := map[string]bool{}
	for _, c := range s.Cases {
		cr := CaseReport{ID: c.ID, Task: c.Task, ExpectFail: c.ExpectFail, PassAtK: map[int]float64{}, PassHatK: map[int]float64{}}
		n := 0
		for _, tr := range results[c.ID] {
			if tr == nil {
				m.Missing++
				continue
			}
			cr.Trials = append(cr.Trials, tr)
			n++
			m.Trials++
			steps += tr.Steps
			calls += tr.ModelCalls
			appSteps += tr.AppSteps
			okSteps += tr.OKSteps
			m.Tokens.Prompt += tr.Usage.PromptTokens
			m.Tokens.Completion += tr.Usage.CompletionTokens
			m.Tokens.Cached += tr.Usage.CachedTokens
			m.Tokens.Estimated = m.Tokens.Estimated || tr.Usage.Estimated
			m.CostEstimated = m.CostEstimated || tr.CostEstimated
			m.WallMS += tr.WallMS
			for ph, ms := range tr.PhaseMS {
				m.PhaseMS[ph] += ms
			}
			if tr.CostUSD != nil {
				m.KnownCostUSD += *tr.CostUSD
			} else {
				unknown[tr.Model] = true
			}
			if tr.Success {
				cr.Successes++
			} else {
				m.Failures[tr.Failure]++
			}
		}
		m.Successes += cr.Successes
		for k := 1; k <= n; k++ {
			cr.PassAtK[k] = PassAtK(n, cr.Successes, k)
			cr.PassHatK[k] = PassHatK(n, cr.Successes, k)
			atK[k] += cr.PassAtK[k]
			hatK[k] += cr.PassHatK[k]
			counted[k]++
		}
		rep.Cases = append(rep.Cases, cr)
	}
	m.Cases = len(s.Cases)
	m.Tokens.Total = m.Tokens.Prompt + m.Tokens.Completion
	if m.Trials > 0 {
		m.SuccessRate = float64(m.Successes) / float64(m.Trials)
		m.MeanSteps = float64(steps) / float64(m.Trials)
		m.MeanModelCalls = float64(calls) / float64(m.Trials)
	}
	if appSteps > 0 {
		m.StepSuccess = float64(okSteps) / float64(appSteps)
	}
	for k, n := range counted {
		m.PassAtK[k] = atK[k] / float64(n)
		m.PassHatK[k] = hatK[k] / float64(n)
	}
	for model := range unknown {
		m.UnknownPrices = append(m.UnknownPrices, model)
	}
	sort.Strings(m.UnknownPrices)
	if len(unknown) == 0 {
		cost := m.KnownCostUSD
		m.CostUSD = &cost
	}
	return rep
}

// ReadReport reads a report.json (a file, or a results directory).
func ReadReport(path string) (*Report, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path += "/report.json"
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report %s: %w", path, err)
	}
	return &r, nil
}

// CostText is the cost as a person reads it: "$0.0123", "~$0.0123
// (estimated: ...)", or "cost unknown (no price for X; ...)".
func (m Metrics) CostText() string {
	if m.CostUSD == nil {
		return fmt.Sprintf("cost unknown (no price for %s; the priced trials cost %s)", strings.Join(m.UnknownPrices, ", "),
			price.Cost{USD: m.KnownCostUSD, Estimated: m.CostEstimated})
	}
	if m.CostEstimated {
		return fmt.Sprintf("~$%.4f (estimated: a provider reported no token usage, Saucer counted the tokens)", *m.CostUSD)
	}
	return fmt.Sprintf("$%.4f", *m.CostUSD)
}

// TokensText is the token totals as a person reads them, "~" marking
// Saucer's own count.
func (t Tokens) TokensText() string {
	mark := ""
	if t.Estimated {
		mark = "~"
	}
	return fmt.Sprintf("%s%d prompt, %s%d completion (%d cached)", mark, t.Prompt, mark, t.Completion, t.Cached)
}

// WriteMarkdown writes a summary: the metrics, a line per case and the
// failures.
func (r *Report) WriteMarkdown(w io.Writer) error {
	m := r.Metrics
	fmt.Fprintf(w, "# Eval: %s\n\n", r.Suite)
	fmt.Fprintf(w, "| metric | value |\n|---|---|\n")
	fmt.Fprintf(w, "| success rate | %.1f%% (%d/%d trials, %d cases) |\n", 100*m.SuccessRate, m.Successes, m.Trials, m.Cases)
	for _, k := range sortedInts(m.PassAtK) {
		fmt.Fprintf(w, "| pass@%d / pass^%d | %.3f / %.3f |\n", k, k, m.PassAtK[k], m.PassHatK[k])
	}
	fmt.Fprintf(w, "| step success | %.1f%% |\n", 100*m.StepSuccess)
	fmt.Fprintf(w, "| mean steps | %.1f |\n", m.MeanSteps)
	fmt.Fprintf(w, "| mean model calls | %.1f |\n", m.MeanModelCalls)
	fmt.Fprintf(w, "| tokens | %s |\n", m.Tokens.TokensText())
	fmt.Fprintf(w, "| cost | %s |\n", m.CostText())
	fmt.Fprintf(w, "| wall time | %s |\n", phaseText(m.WallMS, m.PhaseMS))
	if m.Missing > 0 {
		fmt.Fprintf(w, "| not run | %d trials |\n", m.Missing)
	}
	fmt.Fprintf(w, "\n| case | successes | pass@1 | failures |\n|---|---|---|---|\n")
	for _, c := range r.Cases {
		var fails []string
		for _, t := range c.Trials {
			if !t.Success {
				fails = append(fails, fmt.Sprintf("#%d %s", t.Trial, t.Failure))
			}
		}
		fmt.Fprintf(w, "| %s | %d/%d | %.2f | %s |\n", c.ID, c.Successes, len(c.Trials), c.PassAtK[1], strings.Join(fails, ", "))
	}
	if len(m.Failures) > 0 {
		fmt.Fprintf(w, "\n## Failures by category\n\n")
		for _, k := range slices.Sorted(maps.Keys(m.Failures)) {
			fmt.Fprintf(w, "- %s: %d\n", k, m.Failures[k])
		}
		fmt.Fprintf(w, "\n## Failed trials\n\n")
		for _, c := range r.Cases {
			for _, t := range c.Trials {
				if !t.Success {
					fmt.Fprintf(w, "- **%s #%d** (%s): %s\n", c.ID, t.Trial, t.Failure, oneLine(t.Detail, 300))
				}
			}
		}
	}
	return nil
}

func phaseText(total float64, phases map[string]float64) string {
	parts := []string{fmt.Sprintf("%.0f ms", total)}
	for _, k := range slices.Sorted(maps.Keys(phases)) {
		parts = append(parts, fmt.Sprintf("%s %.0f ms", k, phases[k]))
	}
	return strings.Join(parts, "; ")
}

func sortedInts[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

func oneLine(s string, n int) string { return cutText(strings.Join(strings.Fields(s), " "), n) }

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes JUnit XML: a testsuite per case, a testcase per trial.
func (r *Report) WriteJUnit(w io.Writer) error {
	js := junitSuites{Name: r.Suite}
	for _, c := range r.Cases {
		s := junitSuite{Name: r.Suite + "." + c.ID}
		for _, t := range c.Trials {
			jc := junitCase{Name: fmt.Sprintf("%s#%d", c.ID, t.Trial), Classname: r.Suite + "." + c.ID, Time: t.WallMS / 1000,
				SystemOut: fmt.Sprintf("status %s; answer: %s", t.Status, t.Answer)}
			if !t.Success {
				jc.Failure = &junitFailure{Message: t.Failure, Type: t.Failure, Text: t.Detail}
				s.Failures++
			}
			s.Tests++
			s.Time += jc.Time
			s.Cases = append(s.Cases, jc)
		}
		js.Tests += s.Tests
		js.Failures += s.Failures
		js.Time += s.Time
		js.Suites = append(js.Suites, s)
	}
	io.WriteString(w, xml.Header)
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(js); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

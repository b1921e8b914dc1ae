package evals

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// Comparison is how a run B differs from a run A.
type Comparison struct {
	A, B string
	// Regressions are cases whose success rate fell, Improvements cases
	// whose rate rose; Added and Removed cases are in only one run.
	Regressions, Improvements []CaseDelta
	Added, Removed            []string
	// Deltas are B's metrics minus A's, by name.
	Deltas []MetricDelta
}

// CaseDelta is one case's success rate in both runs.
type CaseDelta struct {
	ID     string
	A, B   float64
	FailsB []string
}

// MetricDelta is one metric in both runs.
type MetricDelta struct {
	Name string
	A, B float64
	// Unknown is set when a value is unknown (a cost without a price).
	Unknown bool
}

// Compare compares two reports case by case and metric by metric.
func Compare(a, b *Report) *Comparison {
	c := &Comparison{A: a.Suite, B: b.Suite}
	rate := func(cr CaseReport) float64 {
		if len(cr.Trials) == 0 {
			return 0
		}
		return float64(cr.Successes) / float64(len(cr.Trials))
	}
	inA := map[string]CaseReport{}
	for _, cr := range a.Cases {
		inA[cr.ID] = cr
	}
	inB := map[string]bool{}
	for _, cb := range b.Cases {
		inB[cb.ID] = true
		ca, ok := inA[cb.ID]
		if !ok {
			c.Added = append(c.Added, cb.ID)
			continue
		}
		d := CaseDelta{ID: cb.ID, A: rate(ca), B: rate(cb)}
		for _, t := range cb.Trials {
			if !t.Success {
				d.FailsB = append(d.FailsB, t.Failure)
			}
		}
		switch {
		case d.B < d.A:
			c.Regressions = append(c.Regressions, d)
		case d.B > d.A:
			c.Improvements = append(c.Improvements, d)
		}
	}
	for _, ca := range a.Cases {
		if !inB[ca.ID] {
			c.Removed = append(c.Removed, ca.ID)
		}
	}
	ma, mb := a.Metrics, b.Metrics
	add := func(name string, x, y float64) { c.Deltas = append(c.Deltas, MetricDelta{Name: name, A: x, B: y}) }
	add("success_rate", ma.SuccessRate, mb.SuccessRate)
	for _, k := range sortedInts(mb.PassAtK) {
		if _, ok := ma.PassAtK[k]; ok {
			add(fmt.Sprintf("pass@%d", k), ma.PassAtK[k], mb.PassAtK[k])
			add(fmt.Sprintf("pass^%d", k), ma.PassHatK[k], mb.PassHatK[k])
		}
	}
	add("step_success", ma.StepSuccess, mb.StepSuccess)
	add("mean_steps", ma.MeanSteps, mb.MeanSteps)
	add("mean_model_calls", ma.MeanModelCalls, mb.MeanModelCalls)
	add("tokens", float64(ma.Tokens.Total), float64(mb.Tokens.Total))
	cost := MetricDelta{Name: "cost_usd", Unknown: ma.CostUSD == nil || mb.CostUSD == nil}
	if !cost.Unknown {
		cost.A, cost.B = *ma.CostUSD, *mb.CostUSD
	}
	c.Deltas = append(c.Deltas, cost)
	add("wall_ms", ma.WallMS, mb.WallMS)
	sort.Slice(c.Regressions, func(i, j int) bool { return c.Regressions[i].ID < c.Regressions[j].ID })
	sort.Slice(c.Improvements, func(i, j int) bool { return c.Improvements[i].ID < c.Improvements[j].ID })
	return c
}

// Write prints the comparison.
func (c *Comparison) Write(w io.Writer) {
	fmt.Fprintf(w, "%-14s %12s %12s %12s\n", "metric", "A", "B", "delta")
	for _, d := range c.Deltas {
		if d.Unknown {
			fmt.Fprintf(w, "%-14s %12s %12s %12s\n", d.Name, "", "", "unknown")
			continue
		}
		fmt.Fprintf(w, "%-14s %12.4g %12.4g %+12.4g\n", d.Name, d.A, d.B, d.B-d.A)
	}
	fmt.Fprintf(w, "\n%d regressions, %d improvements\n", len(c.Regressions), len(c.Improvements))
	for _, d := range c.Regressions {
		fmt.Fprintf(w, "  REGRESSION  %s: %.0f%% → %.0f%% %v\n", d.ID, 100*d.A, 100*d.B, d.FailsB)
	}
	for _, d := range c.Improvements {
		fmt.Fprintf(w, "  IMPROVEMENT %s: %.0f%% → %.0f%%\n", d.ID, 100*d.A, 100*d.B)
	}
	for _, id := range c.Added {
		fmt.Fprintf(w, "  only in B: %s\n", id)
	}
	for _, id := range c.Removed {
		fmt.Fprintf(w, "  only in A: %s\n", id)
	}
}

// WriteReports writes report.json, report.md, junit.xml and report.html
// into the results directory.
func WriteReports(r *Report, dir string) error {
	if err := WriteJSON(filepath.Join(dir, "report.json"), r); err != nil {
		return err
	}
	for name, write := range map[string]func(io.Writer) error{
		"report.md":   r.WriteMarkdown,
		"junit.xml":   r.WriteJUnit,
		"report.html": func(w io.Writer) error { return r.WriteHTML(w, dir) },
	} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		err = write(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

package evals_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/saucerhq/saucer/evals"
)

// timing matches the report's wall-time fields, the only ones that differ
// from run to run.
var timing = regexp.MustCompile(`("wall_ms": )[0-9.e+-]+|("(?:SETUP|CHECK|[A-Z_]+)": )[0-9.e+-]+`)

func normalTiming(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return timing.ReplaceAllString(string(b), "${1}${2}0")
}

// The shards of a run, merged, make the report an unsharded run makes:
// byte for byte but for wall times.
func TestShardsMergeIntoTheUnshardedReport(t *testing.T) {
	whole := t.TempDir()
	if _, err := runSuite(t, "suites/demo-live.yaml", whole, evals.Options{Trials: 2}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3, 5} { // 5 shards: two run no case at all
		var dirs []string
		ran := map[string]int{}
		for i := 1; i <= n; i++ {
			dir := filepath.Join(t.TempDir(), "shard")
			rep, err := runSuite(t, "suites/demo-live.yaml", dir, evals.Options{Trials: 2, Shard: evals.Shard{Index: i, Count: n}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rep.Cases {
				ran[c.ID]++
			}
			dirs = append(dirs, dir)
		}
		if len(ran) != 3 || ran["hello"] != 1 || ran["count-lines"] != 1 || ran["moon-flight"] != 1 {
			t.Fatalf("%d shards ran %v: each case must run in exactly one shard", n, ran)
		}
		out := t.TempDir()
		// Given in any order.
		dirs[0], dirs[len(dirs)-1] = dirs[len(dirs)-1], dirs[0]
		rep, err := evals.Merge(dirs, out)
		if err != nil {
			t.Fatal(err)
		}
		if err := evals.WriteReports(rep, out); err != nil {
			t.Fatal(err)
		}
		if a, b := normalTiming(t, filepath.Join(whole, "report.json")), normalTiming(t, filepath.Join(out, "report.json")); a != b {
			t.Fatalf("%d shards: the merged report differs from the unsharded one:\n%s", n, trajectoryDiff(a, b))
		}
		// The trials came along: their results and recordings.
		if _, err := os.Stat(filepath.Join(out, "cases", "moon-flight", "trial-2", "trajectory", "trajectory.jsonl")); err != nil {
			t.Error(err)
		}
	}
}

func TestMergeRefusesWhatIsNotOneRun(t *testing.T) {
	shard := func(suite string, i, n int, opts evals.Options) string {
		dir := filepath.Join(t.TempDir(), "shard")
		opts.Shard = evals.Shard{Index: i, Count: n}
		if _, err := runSuite(t, suite, dir, opts); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a1, a2 := shard("suites/demo-live.yaml", 1, 2, evals.Options{}), shard("suites/demo-live.yaml", 2, 2, evals.Options{})
	other := shard("suites/demo-live.yaml", 2, 2, evals.Options{Trials: 2})
	of3 := shard("suites/demo-live.yaml", 2, 3, evals.Options{})
	whole := t.TempDir()
	if _, err := runSuite(t, "suites/demo-live.yaml", whole, evals.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{a1}, "shard 2/2 missing"},
		{[]string{a1, a1}, "are both shard 1/2"},
		{[]string{a1, other}, "other options"},
		{[]string{a1, of3}, "one of 2 shards"},
		{[]string{a1, whole}, "run without --shard"},
		{[]string{a1, t.TempDir()}, "not a results directory"},
	} {
		_, err := evals.Merge(tc.dirs, t.TempDir())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.dirs, err, tc.want)
		}
	}
	if _, err := evals.Merge([]string{a1, a2}, t.TempDir()); err != nil {
		t.Errorf("the two halves: %v", err)
	}
	// A shard's directory is its own: another shard does not resume there.
	if _, err := runSuite(t, "suites/demo-live.yaml", a1, evals.Options{Shard: evals.Shard{Index: 2, Count: 2}}); err == nil ||
		!strings.Contains(err.Error(), "results of shard 1/2, not of shard 2/2") {
		t.Errorf("resume with another shard: %v", err)
	}
}

func TestParseShard(t *testing.T) {
	if s, err := evals.ParseShard("2/4"); err != nil || s != (evals.Shard{Index: 2, Count: 4}) {
		t.Errorf("2/4: %v %v", s, err)
	}
	for in, want := range map[string]string{"0/4": "JOB_COMPLETION_INDEX+1", "5/4": "from 1 to 4", "1/0": "at least 1", "two": "write i/n", "1/": "write i/n"} {
		if _, err := evals.ParseShard(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
}

// The Kubernetes manifest in the README is a valid indexed Job whose pods
// each run one shard of as many as the Job has completions.
func TestReadmeIndexedJob(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(apiVersion: batch/v1\n.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("no Job manifest in evals/README.md")
	}
	var job struct {
		Kind string
		Spec struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Template       struct {
				Spec struct {
					Containers []struct {
						Command, Args []string
					}
				}
			}
		}
	}
	if err := yaml.Unmarshal(m[1], &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers
	if job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || len(c) != 1 || len(c[0].Args) != 1 {
		t.Fatalf("%+v", job)
	}
	want := fmt.Sprintf("--shard $((JOB_COMPLETION_INDEX + 1))/%d ", job.Spec.Completions)
	if !strings.Contains(c[0].Args[0], want) || !strings.Contains(c[0].Args[0], "-o /work/results/shard-$JOB_COMPLETION_INDEX") {
		t.Errorf("the pod's command %q lacks %q", c[0].Args[0], want)
	}
}

package constellation

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/evals"
)

// The bundled eval suite of constellation cases runs through evals.Run:
// every case passes with each device's checks run on that device, each
// trial's recording replays offline, and a wrong expectation on one
// device fails its case with that device's check named.
func TestEvalSuiteTargetsConstellations(t *testing.T) {
	s, err := evals.LoadSuite("../evals/suites/constellation.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The negative control: one device's expectation made wrong.
	ctrl := s.Cases[0]
	ctrl.ID = "control-wrong-total"
	k := *ctrl.Constellation
	k.Devices = append([]evals.ConstellationDevice(nil), k.Devices...)
	wrong := "total=9"
	k.Devices[1].Checks = []evals.Check{{Name: "total copied", State: &evals.StateCheck{Run: "cat copy.txt", Output: &wrong}}}
	ctrl.Constellation = &k
	s.Cases = append(s.Cases, ctrl)

	out := t.TempDir()
	rep, err := evals.Run(context.Background(), s, evals.Options{Results: out, Constellations: EvalRunner{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		tr := c.Trials[0]
		if c.ID == "control-wrong-total" {
			if tr.Success || tr.Failure != evals.FailCheckerFailed || !strings.Contains(tr.Detail, "linux2: total copied") {
				t.Errorf("the control: success %v, %s: %s", tr.Success, tr.Failure, tr.Detail)
			}
			continue
		}
		if !tr.Success {
			t.Errorf("%s: %s: %s", c.ID, tr.Failure, tr.Detail)
		}
		want := 0
		for _, sc := range s.Cases {
			if sc.ID == c.ID {
				for _, d := range sc.Constellation.Devices {
					want += len(d.Checks)
				}
			}
		}
		if len(tr.Checks) != want || want == 0 || !strings.HasPrefix(tr.Checks[0].Name, "linux") {
			t.Errorf("%s: checks %+v, want %d named by device", c.ID, tr.Checks, want)
		}
		// The recording is there and replays offline; with a node's end
		// lost it does not.
		events := readRecordingFile(t, filepath.Join(out, tr.Trajectory))
		if _, err := Replay(events); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
		var cut []Event
		dropped := false
		for _, e := range events {
			if !dropped && e.Kind == "node_end" && e.Outcome != nil && e.Outcome.OK {
				dropped = true
				continue
			}
			cut = append(cut, e)
		}
		if _, err := Replay(cut); err == nil {
			t.Errorf("%s: a recording without a node's end replayed", c.ID)
		}
	}

	// Without a constellation runner, such a case says what is missing.
	rep, err = evals.Run(context.Background(), &evals.Suite{Name: "x", Cases: s.Cases[:1]}, evals.Options{Results: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if tr := rep.Cases[0].Trials[0]; tr.Failure != evals.FailInfra || !strings.Contains(tr.Detail, "Options.Constellations") {
		t.Errorf("no runner: %s: %s", tr.Failure, tr.Detail)
	}
}

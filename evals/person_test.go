package evals_test

import (
	"testing"

	"github.com/saucerhq/saucer/evals"
)

// TestCasePerson: a case's declared answers and approvals reach the
// agents; a declined write does not run; a question the case does not
// answer fails with the reason.
func TestCasePerson(t *testing.T) {
	rep, err := runSuite(t, "testdata/person.yaml", t.TempDir(), evals.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cases {
		for _, tr := range c.Trials {
			if !tr.Success {
				t.Errorf("%s: %s %s (answer %q)", c.ID, tr.Failure, tr.Detail, tr.Answer)
			}
		}
	}
}

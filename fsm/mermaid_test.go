package fsm

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/fsm.mmd from MermaidAll")

func TestMermaidGolden(t *testing.T) {
	golden := filepath.Join("testdata", "fsm.mmd")
	got := MermaidAll()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run: go test ./fsm -update)", err)
	}
	if got != string(want) {
		t.Fatalf("MermaidAll() differs from %s (if the table changed on purpose, run: go test ./fsm -update)\ngot:\n%s", golden, got)
	}
}

// TestMermaidMatchesTable checks the diagram against the table line by line,
// independent of the golden file.
func TestMermaidMatchesTable(t *testing.T) {
	for _, r := range roles {
		lines := strings.Split(strings.TrimSuffix(Mermaid(r), "\n"), "\n")
		if lines[0] != "stateDiagram-v2" || strings.TrimSpace(lines[1]) != "[*] --> CONTINUE" {
			t.Fatalf("%s: diagram starts with %q", r, lines[:2])
		}
		var want []string
		for _, s := range States(r) {
			for _, to := range Table(r)[s] {
				want = append(want, string(s)+" --> "+string(to))
			}
		}
		for _, s := range States(r) {
			if s.Terminal() {
				want = append(want, string(s)+" --> [*]")
			}
		}
		body := lines[2:]
		if len(body) != len(want) {
			t.Fatalf("%s: %d transition lines, want %d", r, len(body), len(want))
		}
		for i := range want {
			if strings.TrimSpace(body[i]) != want[i] {
				t.Errorf("%s line %d = %q, want %q", r, i+3, body[i], want[i])
			}
		}
		if Mermaid(r) != Mermaid(r) {
			t.Fatalf("%s: diagram is not deterministic", r)
		}
	}
	if Mermaid(Role("robot")) != "" {
		t.Fatal("Mermaid(unknown role) is not empty")
	}
	all := MermaidAll()
	if !strings.HasPrefix(all, "%% host agent\n"+Mermaid(Host)) || !strings.HasSuffix(all, "\n%% app agent\n"+Mermaid(App)) {
		t.Fatalf("MermaidAll() is not host then app:\n%s", all)
	}
}

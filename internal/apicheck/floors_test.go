package apicheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

// floors are the floors of ARCHITECTURE.md (the house plan), by package
// path in the module; a package not named takes the floor of the nearest
// folder above it that is. A package imports only packages on its own
// floor or below.
var floors = map[string]int{
	// 0: helpers that know no Saucer package.
	"internal": 0, "internal/backoff": 0, "internal/tokens": 1,
	// 1: the vocabulary, models, prompts, memory, recordings, the FSM.
	"command": 1, "llm": 1, "prompts": 1, "memory": 1, "trajectory": 1, "fsm": 1,
	// 2: tools, the wire, sandboxes.
	"tools": 2, "aip": 2, "sandbox": 2, "internal/mcpserve": 2, "internal/shell": 2,
	"internal/files": 2, "internal/display": 2, "internal/desktoptest": 2, "internal/sandboxtest": 2,
	// 3: the device client and the dispatchers.
	"client": 3, "dispatcher": 3, "internal/remote": 3,
	// 4: strategies.
	"strategy": 4,
	// 5: agents, the config, the assembly and what builds on agents.
	"agent": 5, "knowledge": 5, "config": 5, "session": 5, "internal/record": 5, "local": 5, "telemetry": 5,
	"internal/telemetrytest": 5,
	// 6: the server and evals, side by side.
	"server": 6, "evals": 6, "internal/storetest": 6, "internal/agentbench": 6, "internal/desktopsuite": 6,
	// 7: the console and constellations.
	"internal/console": 7, "constellation": 7,
	// 8: the command line, the server's entry point it wraps, examples.
	"cmd": 8, "server/serve": 8, "examples": 8,
}

// apart are what the plan's "must not know about" column says of
// imports the floors alone allow: the packages on from's floor entry
// (from and the folders under it that floors does not name apart) must
// not import to or anything under it.
var apart = []struct{ from, to, why string }{
	{"prompts", "llm/openai", "prompts know no LLM provider"},
	{"prompts", "llm/langchain", "prompts know no LLM provider"},
	{"prompts", "llm/provider", "prompts know no LLM provider"},
	{"fsm", "llm", "the FSM knows no LLM"},
	{"aip", "tools", "the wire knows no MCP"},
	{"aip", "internal/mcpserve", "the wire knows no MCP"},
	{"client", "dispatcher", "the device client knows no dispatcher"},
	{"internal/remote", "dispatcher", "the device client knows no dispatcher"},
	{"client", "llm", "the device client knows no LLM"},
	{"client", "prompts", "the device client knows no prompts"},
	{"dispatcher", "llm", "dispatchers know no LLM"},
	{"dispatcher", "prompts", "dispatchers know no prompts"},
	{"agent", "aip", "agents know no transport"},
	{"agent", "internal/remote", "agents know no transport"},
	{"config", "agent", "the config knows no agent's internals"},
	{"config", "aip", "the config knows no wire protocol"},
	{"server", "evals", "the server knows no evals (serve.Review injects them)"},
	{"internal/console", "agent", "the console shows what the API has"},
	{"internal/console", "strategy", "the console shows what the API has"},
	{"constellation", "client", "constellation devices come from the assembly"},
	{"constellation", "internal/remote", "constellation devices come from the assembly"},
}

// pending are imports the plan forbids that an open issue still has to
// remove. The test fails when one is gone: then delete it here.
var pending = map[[2]string]string{}

// floorOf is a package's floor, and the entry of floors that gives it.
func floorOf(rel string) (int, string, bool) {
	for p := rel; p != "."; p = parentDir(p) {
		if f, ok := floors[p]; ok {
			return f, p, true
		}
	}
	return 0, "", false
}

func parentDir(p string) string {
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[:i]
	}
	return "."
}

// under reports whether rel is pkg or inside it.
func under(rel, pkg string) bool { return rel == pkg || strings.HasPrefix(rel, pkg+"/") }

type listed struct {
	rel     string
	imports []string // the module's packages it imports, and third-party ones by full path
	deps    []string // the module's packages it depends on, directly or not (go list's Deps)
}

// moduleGraph lists the module's packages (their code, not their tests)
// with what they import and depend on.
var moduleGraph = sync.OnceValues(func() ([]listed, error) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}	{{join .Imports " "}}	{{join .Deps " "}}`, module+"/...").Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return nil, fmt.Errorf("go list: %v\n%s", err, ee.Stderr)
	}
	if err != nil {
		return nil, err
	}
	var pkgs []listed
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			continue
		}
		rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }
		l := listed{rel: rel(f[0])}
		for _, p := range strings.Fields(f[1]) {
			if strings.HasPrefix(p, module+"/") {
				p = rel(p)
			}
			l.imports = append(l.imports, p)
		}
		for _, p := range strings.Fields(f[2]) {
			if strings.HasPrefix(p, module+"/") {
				l.deps = append(l.deps, rel(p))
			}
		}
		pkgs = append(pkgs, l)
	}
	return pkgs, sc.Err()
})

// TestFloors: every package of the module stands on a floor of the plan,
// and nothing it depends on, directly or not, stands higher; the imports the
// plan's "must not know about" column forbids are absent; only the
// command line knows its flag library, and only the device client and
// the internal server bridge know the MCP library.
func TestFloors(t *testing.T) {
	pkgs, err := moduleGraph()
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list found only %d packages of the module", len(pkgs))
	}
	seen := map[[2]string]bool{}
	for _, p := range pkgs {
		own, home, ok := floorOf(p.rel)
		if !ok {
			t.Errorf("%s stands on no floor: add it to floors here and to the plan's table in ARCHITECTURE.md", p.rel)
			continue
		}
		for _, d := range p.deps {
			if f, at, ok := floorOf(d); ok && f > own {
				t.Errorf("%s (floor %d) depends on %s (floor %d, as %s): move what it needs to floor %d or below", p.rel, own, d, f, at, own)
			}
		}
		for _, imp := range p.imports {
			for _, a := range apart {
				if home != a.from || !under(imp, a.to) {
					continue
				}
				key := [2]string{a.from, a.to}
				if _, ok := pending[key]; ok {
					seen[key] = true
					continue
				}
				t.Errorf("%s imports %s: %s", p.rel, imp, a.why)
			}
			if (strings.HasPrefix(imp, "github.com/spf13/cobra") || strings.HasPrefix(imp, "github.com/spf13/pflag")) && !under(p.rel, "cmd") {
				t.Errorf("%s imports %s: only the command line knows its flags", p.rel, imp)
			}
			if strings.HasPrefix(imp, mcpGo) && !under(p.rel, "client") && p.rel != "internal/mcpserve" {
				t.Errorf("%s imports %s: the MCP library stays behind client and internal/mcpserve", p.rel, imp)
			}
		}
	}
	for key, why := range pending {
		if !seen[key] {
			t.Errorf("no package under %s imports %s any more (%s): delete the entry of pending", key[0], key[1], why)
		}
	}
}

// The check finds a package above its floor, and one in a folder no floor
// names.
func TestFloorsOfPaths(t *testing.T) {
	for rel, want := range map[string]int{"server/store": 6, "server/serve": 8, "internal/record": 5, "trajectory": 1,
		"llm/openai": 1, "internal/mcpserve": 2, "internal/clock": 0, "internal/remote": 3, "tools/desktop/internal/wl": 2} {
		if got, _, ok := floorOf(rel); !ok || got != want {
			t.Errorf("floor of %s: %d %v, want %d", rel, got, ok, want)
		}
	}
	if _, _, ok := floorOf("nowhere/pkg"); ok {
		t.Error("a package in no named folder has a floor")
	}
	pkgs, err := moduleGraph()
	if err != nil {
		t.Fatal(err)
	}
	// The graph is the real one: the server depends on its store, and
	// the command line on the server's entry point.
	has := func(rel, dep string) bool {
		i := slices.IndexFunc(pkgs, func(l listed) bool { return l.rel == rel })
		return i >= 0 && slices.Contains(pkgs[i].deps, dep)
	}
	if !has("server", "server/store") || !has("cmd/saucer", "server/serve") || has("server", "evals") {
		t.Error("go list's graph is not the module's")
	}
}

package agentbench

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/saucerhq/saucer/evals"
)

// CannotJudge labels the tasks that Saucer's sandbox cannot judge: their
// setup, their solution or their checker needs what the sandbox refuses,
// or reads a variable that is set nowhere it runs. Import says why, task
// by task, in its warnings.
const CannotJudge = "cannot-judge-here"

// The answer rules a case states (evals.Case.AnswerFormat), written from
// what AgentBench's checkers accept: its agents are told only "a single
// number, no sentences", and a checker that reads int(answer) fails on
// "30 types" where 30 was right.
const (
	// IntegerFormat: check/integer-match.py compares int(answer) with
	// int(expected); Python's int takes an optional sign and digits, with
	// spaces around.
	IntegerFormat = "a single integer, digits only (such as 42): no words, units, decimal point or thousands separators"
	// SizeFormat: check/size-match.py reads a whole number, alone (bytes)
	// or followed by B, Byte, K, M, G, T or P (powers of 1024). It tries
	// the suffix B first, so "4KB" is read as int("4K") and fails, as
	// does "4.0K".
	SizeFormat = "a size as a whole number: of bytes (4096), or followed by one capital letter K, M, G, T or P for 1024-based units (4K); no decimal point, no KB, MB or iB, no words"
	// ExactFormat: a match answer, and check/string-match.py, compare the
	// whole answer (stripped) with the expected text.
	ExactFormat = "exactly the text asked for, alone: the same spelling and case, with no sentence, label, quotes or final punctuation around it"
	// ContainingFormat: check/containing.py passes when the expected text
	// is inside the answer.
	ContainingFormat = "text that contains the exact value asked for"
	// PartFormat: check/in.py passes when the answer is inside the
	// expected text.
	PartFormat = "the value asked for alone (or a part of it), with nothing added"
	// AloneFormat: a checker of the task's own that reads the answer
	// (argv[1]).
	AloneFormat = "the answer alone, exactly, with no words around it"
)

// checkers tells AgentBench's shared check scripts apart by the comparison
// each makes (its file name may differ from one data folder to another),
// with spaces removed.
var checkers = []struct{ signature, format string }{
	{"int(argv[1])==int(argv[2])", IntegerFormat},
	{"analysis_size(argv[1])==analysis_size(argv[2])", SizeFormat},
	{"norm_newline(argv[1]).strip()==norm_newline(argv[2]).strip()", ExactFormat},
	{"ifv2inv1:", ContainingFormat}, // v1 the answer, v2 the expected
	{"ifv1inv2:", PartFormat},
}

var integerText = regexp.MustCompile(`^[-+]?\d+$`)

// matchFormat is the rule for a match evaluation: the answer is compared
// whole (stripped); a regex anchored at an end wants the answer alone.
func matchFormat(a *evals.AnswerCheck) string {
	switch {
	case a.Exact != nil && integerText.MatchString(strings.TrimSpace(*a.Exact)):
		return IntegerFormat
	case a.Exact != nil:
		return ExactFormat
	case strings.HasPrefix(a.Regex, "^") || strings.HasSuffix(a.Regex, "$"):
		return AloneFormat
	}
	return ""
}

// pipelineFormat is the rule of the first check script that reads the
// answer, "" when none does (a state check).
func pipelineFormat(pipe []evals.Script) string {
	for _, s := range pipe {
		if s.Language != evals.LangPython {
			continue
		}
		code := strings.Join(strings.Fields(s.Code), "")
		for _, c := range checkers {
			if strings.Contains(code, c.signature) {
				return c.format
			}
		}
		if strings.Contains(code, "argv[1]") {
			return AloneFormat
		}
	}
	return ""
}

// placed is one of a task's scripts and where it runs: in a process of its
// own (init scripts, check scripts, the example run by a check for the
// expected output), or in the agent's shell (start, the example played as
// the agent).
type placed struct {
	what       string
	script     evals.Script
	agentShell bool
}

// startScript names the start script among a task's scripts.
const startScript = "start"

// cannotJudge says why a task cannot be judged in Saucer's sandbox, a
// reason for each thing that stops it, or nothing when it can be.
func cannotJudge(scripts []placed) []string {
	var why []string
	said := map[string]bool{} // the example may run twice: as the agent, and for a check
	for _, p := range scripts {
		if said[p.script.Code] {
			continue
		}
		if what := setID(p.script); what != "" {
			said[p.script.Code] = true
			why = append(why, fmt.Sprintf("%s %s; the sandbox refuses to make setuid or setgid files (its seccomp filter, docs/sandbox.md), so it fails there", p.what, what))
		}
	}
	return append(why, unsetVariables(scripts)...)
}

// setuidPackages are Debian packages that install setuid or setgid files,
// which dpkg cannot make inside the sandbox.
var setuidPackages = []string{"sudo", "passwd", "mount", "fuse", "fuse3", "pkexec", "policykit-1", "openssh-client", "openssh-server"}

var (
	modeCommand   = regexp.MustCompile(`(?:^|[\s;&|(\x60])(chmod|install|mkdir)\s+([^;&|\n)\x60]*)`)
	aptInstall    = regexp.MustCompile(`\b(?:apt|apt-get|aptitude)\s+(?:-\S+\s+)*install\b([^;&|\n)]*)`)
	octalMode     = regexp.MustCompile(`^[0-7]{4,}$`)
	symbolicMode  = regexp.MustCompile(`^([ugoa]*)((?:[-+=][rwxXstugo]*)+)$`)
	modeOperation = regexp.MustCompile(`[-+=][^-+=]*`)
	pythonSetID   = regexp.MustCompile(`S_IS[UG]ID|chmod\([^)]*0o?[2-7][0-7]{3}\b`)
)

// setID says what in s makes a setuid or setgid file ("runs `chmod u+s
// /usr/bin/find`"), "" when nothing does.
func setID(s evals.Script) string {
	if s.Language == evals.LangPython {
		if m := pythonSetID.FindString(s.Code); m != "" {
			return fmt.Sprintf("sets a setuid or setgid mode (%s)", m)
		}
		return ""
	}
	code := shellCode(s.Code)
	for _, m := range modeCommand.FindAllStringSubmatch(code, -1) {
		args := strings.Fields(m[2])
		var mode string
		switch m[1] {
		case "chmod":
			for _, a := range args {
				if !strings.HasPrefix(a, "-") || symbolicMode.MatchString(a) {
					mode = a
					break
				}
			}
		default: // install -m MODE, mkdir -m MODE
			for i, a := range args {
				switch {
				case (a == "-m" || a == "--mode") && i+1 < len(args):
					mode = args[i+1]
				case strings.HasPrefix(a, "--mode="):
					mode = strings.TrimPrefix(a, "--mode=")
				case strings.HasPrefix(a, "-m") && len(a) > 2:
					mode = a[2:]
				}
			}
		}
		if setsIDBits(strings.Trim(mode, `'"`)) {
			return fmt.Sprintf("runs `%s`", strings.TrimSpace(m[1]+" "+m[2]))
		}
	}
	for _, m := range aptInstall.FindAllStringSubmatch(code, -1) {
		for _, a := range strings.Fields(m[1]) {
			if slices.Contains(setuidPackages, strings.Trim(a, `'"`)) {
				return fmt.Sprintf("installs %s, a package with setuid files (`%s`)", a, strings.TrimSpace(m[0]))
			}
		}
	}
	return ""
}

// setsIDBits reports whether a chmod mode adds the setuid or setgid bit:
// an octal mode with 4000 or 2000 in it, or a symbolic one that adds s
// for the owner, the group or all ("u+s", "g+s", "+s"; "o+s" does
// nothing).
func setsIDBits(mode string) bool {
	if octalMode.MatchString(mode) {
		v, err := strconv.ParseUint(mode, 8, 32)
		return err == nil && v&0o6000 != 0
	}
	for _, clause := range strings.Split(mode, ",") {
		m := symbolicMode.FindStringSubmatch(clause)
		if m == nil || (m[1] != "" && strings.Trim(m[1], "o") == "") {
			continue
		}
		for _, op := range modeOperation.FindAllString(m[2], -1) {
			if op[0] != '-' && strings.Contains(op, "s") {
				return true
			}
		}
	}
	return false
}

// standardVariables are set in every shell, or by bash itself.
var standardVariables = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range strings.Fields("HOME PATH PWD OLDPWD USER LOGNAME SHELL TERM LANG LANGUAGE LC_ALL HOSTNAME HOSTTYPE UID EUID " +
		"PPID RANDOM SRANDOM LINENO SECONDS IFS BASH BASHPID BASH_VERSION BASH_SOURCE BASH_REMATCH FUNCNAME OSTYPE MACHTYPE " +
		"REPLY OPTARG OPTIND TMPDIR PS1 PS2 PS4 PIPESTATUS COLUMNS LINES MAIL SHLVL GROUPS EPOCHSECONDS EPOCHREALTIME") {
		m[v] = true
	}
	return m
}()

var (
	variableRead   = regexp.MustCompile(`\$(?:\{[#!]?([A-Za-z_]\w*)|([A-Za-z_]\w*))`)
	variableSet    = regexp.MustCompile(`(?:^|[\s;&|(\x60{])(?:(?:export|local|declare|typeset|readonly)\s+(?:-\w+\s+)*)?([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?=`)
	variableNamed  = regexp.MustCompile(`\b(?:read|mapfile|readarray)\s+(?:-\S+\s+)*([A-Za-z_]\w*)|\bfor\s+([A-Za-z_]\w*)\s+in\b|\bprintf\s+-v\s+([A-Za-z_]\w*)|\bgetopts\s+\S+\s+([A-Za-z_]\w*)`)
	arithmetic     = regexp.MustCompile(`\(\(([^()]*(?:\([^()]*\)[^()]*)*)\)\)`)
	arithmeticSet  = regexp.MustCompile(`([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=[^=]|([A-Za-z_]\w*)\s*(?:\+\+|--)|(?:\+\+|--)\s*([A-Za-z_]\w*)`)
	pythonEnvRead  = regexp.MustCompile(`os\.(?:environ\[\s*|environ\.get\(\s*|getenv\(\s*)['"]([A-Za-z_]\w*)['"]`)
	pythonEnvWrite = regexp.MustCompile(`os\.environ\[\s*['"]([A-Za-z_]\w*)['"]\s*\]\s*=[^=]`)
)

// variables are the environment variables s reads and those it sets.
func variables(s evals.Script) (reads, sets map[string]bool) {
	reads, sets = map[string]bool{}, map[string]bool{}
	if s.Language == evals.LangPython {
		for _, m := range pythonEnvRead.FindAllStringSubmatch(s.Code, -1) {
			reads[m[1]] = true
		}
		for _, m := range pythonEnvWrite.FindAllStringSubmatch(s.Code, -1) {
			sets[m[1]] = true
		}
		return reads, sets
	}
	code := shellCode(s.Code)
	for _, m := range variableRead.FindAllStringSubmatchIndex(code, -1) {
		if m[0] > 0 && code[m[0]-1] == '\\' {
			continue // \$NAME is text
		}
		name := code[max(m[2], m[4]):max(m[3], m[5])]
		reads[name] = true
	}
	for _, re := range []*regexp.Regexp{variableSet, variableNamed} {
		for _, m := range re.FindAllStringSubmatch(code, -1) {
			for _, name := range m[1:] {
				if name != "" {
					sets[name] = true
				}
			}
		}
	}
	for _, a := range arithmetic.FindAllStringSubmatch(code, -1) {
		for _, m := range arithmeticSet.FindAllStringSubmatch(a[1], -1) {
			sets[m[1]+m[2]+m[3]] = true
		}
	}
	return reads, sets
}

// shellCode is a shell script without its comments and the text of its
// single-quoted strings (an awk program's $NF is awk's, not the shell's).
func shellCode(code string) string {
	var b strings.Builder
	quoted, comment, wordStart := false, false, true
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
				b.WriteByte(c)
			}
		case quoted:
			if c == '\'' {
				quoted = false
				b.WriteString("''")
			}
		case c == '\\' && i+1 < len(code):
			b.WriteByte(c)
			b.WriteByte(code[i+1])
			i++
		case c == '\'':
			quoted = true
		case c == '#' && wordStart:
			comment = true
		default:
			b.WriteByte(c)
		}
		wordStart = strings.IndexByte(" \t\n;&|(", c) >= 0
	}
	return b.String()
}

// unsetVariables finds the variables a script reads that nothing sets
// where it runs: a process of its own sees only what it sets itself (a
// task's init scripts each run so in AgentBench too, so what one exports
// reaches neither the agent nor the checker); the agent's shell sees
// what the start script set. A variable read in the agent's shell is only
// reported when another of the task's scripts sets it: what the agent
// sets there is the agent's business.
func unsetVariables(scripts []placed) []string {
	setBy := map[string][]string{} // variable: the scripts that set it
	setIn := make([]map[string]bool, len(scripts))
	readIn := make([]map[string]bool, len(scripts))
	startSets := map[string]bool{}
	for i, p := range scripts {
		readIn[i], setIn[i] = variables(p.script)
		for v := range setIn[i] {
			setBy[v] = append(setBy[v], p.what)
			if p.what == startScript {
				startSets[v] = true
			}
		}
	}
	unsetFor := map[string][]string{} // variable: the scripts that read it unset
	for i, p := range scripts {
		for v := range readIn[i] {
			switch {
			case setIn[i][v] || standardVariables[v] || (p.agentShell && startSets[v]):
			case p.agentShell && len(setBy[v]) == 0:
			default:
				unsetFor[v] = append(unsetFor[v], p.what)
			}
		}
	}
	var why []string
	for _, v := range slices.Sorted(maps.Keys(unsetFor)) {
		readers := strings.Join(unsetFor[v], " and ")
		if setters := slices.Compact(setBy[v]); len(setters) > 0 {
			why = append(why, fmt.Sprintf("$%s is read by %s, but only %s sets it, in another process: each init and check script runs in a shell of its own and the start script in the agent's (in AgentBench too), so a variable one of them exports reaches no other, and $%s is unset where it is read",
				v, readers, strings.Join(setters, " and "), v))
		} else {
			why = append(why, fmt.Sprintf("$%s is read by %s, but none of the task's scripts sets it", v, readers))
		}
	}
	return why
}

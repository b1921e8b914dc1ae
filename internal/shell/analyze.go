package shell

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// The policy reads a command line as bash does, with a real shell parser:
// quotes, escapes, here-strings and heredocs, substitutions, parameter and
// arithmetic expansions, assignments before a command. It finds every
// simple command (a call), wherever it is (pipelines, lists, loops,
// functions, substitutions), and the commands hidden in calls (sh -c
// code, env/xargs/timeout/sudo..., find -exec, eval). Each call is judged
// by the allow and deny patterns; under an allow list, some forms of an
// allowed command are refused unless a pattern names them (a danger).

// call is one simple command as the policy sees it.
type call struct {
	words   []word
	assigns []assign
	redirs  []*syntax.Redirect
	src     string // as written, for deny patterns and messages
	// fed is how the line feeds the call's standard input from outside
	// the call ("|" for a pipe, or an enclosing command's redirection), or
	// "": its own redirections are in redirs.
	fed string
}

// word is one argument: its value when it is known before the command
// runs (quotes removed, escapes resolved), else its text as written.
type word struct {
	text   string
	static bool
}

type assign struct {
	name, value string
	static      bool
}

// danger is a form of a call that an allow pattern must name to let it
// run: what it is, and the words a pattern may name it by.
type danger struct {
	what     string
	triggers []string
}

// text is the call as patterns see it: its words, values where known,
// then its redirections.
func (c call) text() string {
	parts := make([]string, 0, len(c.words)+len(c.redirs))
	for _, w := range c.words {
		parts = append(parts, w.text)
	}
	for _, r := range c.redirs {
		parts = append(parts, redirText(r))
	}
	return strings.Join(parts, " ")
}

func redirText(r *syntax.Redirect) string {
	op := r.Op.String()
	if r.N != nil {
		op = r.N.Value + op
	}
	target := ""
	if r.Word != nil {
		target = wordOf(r.Word).text
	}
	return op + " " + target
}

// parseLine parses a command line as bash.
func parseLine(line string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
}

// wordOf reads a word: static when it has no expansion of any kind
// (parameters, substitutions, arithmetic, globs, braces).
func wordOf(w *syntax.Word) word {
	dynamic := func() word { return word{text: printWord(w)} }
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") {
				return dynamic()
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return dynamic()
				}
			}
		default:
			return dynamic()
		}
	}
	if lit := w.Lit(); lit != "" && !strings.ContainsAny(lit, "\\{~") {
		return word{text: lit, static: true} // the common case: a plain word
	}
	braces := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if syntax.SplitBraces(braces) {
		return dynamic()
	}
	v, err := expand.Literal(literalConfig, w)
	if err != nil {
		return dynamic()
	}
	return word{text: v, static: true}
}

// literalConfig expands nothing from the environment: words that need it
// are not static.
var literalConfig = &expand.Config{Env: expand.ListEnviron()}

func printWord(w *syntax.Word) string {
	var b strings.Builder
	syntax.NewPrinter().Print(&b, w)
	return b.String()
}

func nodeSource(line string, n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(line) || start > end {
		return ""
	}
	return line[start:end]
}

// codeInValue finds shell code carried in a value: a command or process
// substitution, which ${X@P}, arithmetic or eval would run.
var codeInValue = regexp.MustCompile("\\$\\(|`|<\\(|>\\(")

// scanner walks a parsed line: it collects the calls, and under an allow
// list the first construct that no pattern can judge (refusal).
type scanner struct {
	line    string
	allow   bool // an allow list is in force
	calls   []call
	refusal string
	// fed are the statements whose standard input the line feeds (in a
	// pipe, or in a compound command with an input redirection); fedAll
	// is set once exec has redirected the shell's own input, or for code
	// run by a call whose input is fed.
	fed    map[*syntax.Stmt]string
	fedAll string
}

// feed marks every statement in n as reading input the line gives.
func (s *scanner) feed(n syntax.Node, op string) {
	if s.fed == nil {
		s.fed = map[*syntax.Stmt]string{}
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		if st, ok := n.(*syntax.Stmt); ok && s.fed[st] == "" {
			s.fed[st] = op
		}
		return true
	})
}

// inputRedir is the operator of an input redirection among rs, or "".
func inputRedir(rs []*syntax.Redirect) string {
	for _, r := range rs {
		switch r.Op {
		case syntax.WordHdoc, syntax.Hdoc, syntax.DashHdoc, syntax.RdrIn, syntax.RdrInOut:
			if r.N == nil || r.N.Value == "0" {
				return r.Op.String()
			}
		}
	}
	return ""
}

func (s *scanner) refuse(format string, args ...any) {
	if s.refusal == "" {
		s.refusal = fmt.Sprintf(format, args...)
	}
}

func (s *scanner) scan(f *syntax.File) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				s.feed(n.Y, "|")
			}
		case *syntax.Stmt:
			if _, ok := n.Cmd.(*syntax.CallExpr); !ok && n.Cmd != nil {
				if op := inputRedir(n.Redirs); op != "" {
					s.feed(n.Cmd, op)
				}
			}
			s.stmt(n)
		case *syntax.CmdSubst, *syntax.ProcSubst:
			if s.allow {
				s.refuse("command or process substitution ($(...), backquotes, <(...), >(...)) is not allowed when only some commands are")
			}
		case *syntax.ParamExp:
			if s.allow {
				s.param(n)
			}
		case *syntax.ArithmExp:
			s.arithm(n.X)
		case *syntax.ArithmCmd:
			s.arithm(n.X)
		case *syntax.LetClause:
			for _, x := range n.Exprs {
				s.arithm(x)
			}
		case *syntax.CStyleLoop:
			for _, x := range []syntax.ArithmExpr{n.Init, n.Cond, n.Post} {
				if x != nil {
					s.arithm(x)
				}
			}
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				// [[ A -eq B ]] evaluates A and B as arithmetic.
				for _, x := range []syntax.TestExpr{n.X, n.Y} {
					if w, ok := x.(*syntax.Word); !ok || !isNumber(w) {
						s.arithmRefusal()
					}
				}
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet {
				s.arithmRefusal() // [[ -v a[SUBSCRIPT] ]] evaluates the subscript
			}
		case *syntax.DeclClause:
			s.decl(n)
		}
		return true
	})
}

func (s *scanner) stmt(st *syntax.Stmt) {
	c, ok := st.Cmd.(*syntax.CallExpr)
	if !ok {
		// A compound command's redirections have no call to name them.
		if st.Cmd != nil && s.allow {
			for _, r := range st.Redirs {
				if d, ok := writeRedir(r); ok {
					s.refuse("%s on a compound command (%s) cannot be named by an allow pattern; redirect inside it", d.what, nodeSource(s.line, st))
				}
			}
		}
		return
	}
	k := call{redirs: st.Redirs, src: nodeSource(s.line, st), fed: s.fed[st]}
	if k.fed == "" {
		k.fed = s.fedAll
	}
	for _, a := range c.Assigns {
		k.assigns = append(k.assigns, assignOf(a))
	}
	for _, w := range c.Args {
		k.words = append(k.words, wordOf(w))
	}
	s.calls = append(s.calls, k)
	if len(k.words) == 1 && k.words[0].text == "exec" {
		// exec < FILE: every later command reads FILE.
		if op := inputRedir(st.Redirs); op != "" && s.fedAll == "" {
			s.fedAll = op
		}
	}
}

func assignOf(a *syntax.Assign) assign {
	out := assign{static: a.Index == nil && a.Array == nil}
	if a.Name != nil {
		out.name = a.Name.Value
	}
	if a.Value != nil {
		w := wordOf(a.Value)
		out.value, out.static = w.text, out.static && w.static
	}
	return out
}

// decl is declare, typeset, local, export, readonly: a call for the
// patterns, whose -i (integer: every later assignment is arithmetic) and
// -n (a name reference, which can name a subscript) cannot be checked.
func (s *scanner) decl(d *syntax.DeclClause) {
	k := call{src: nodeSource(s.line, d), words: []word{{text: d.Variant.Value, static: true}}}
	for _, a := range d.Args {
		switch {
		case a.Naked && a.Name == nil && a.Value != nil:
			w := wordOf(a.Value)
			if s.allow && w.static && declFlags.MatchString(w.text) {
				s.refuse("%s %s: integer variables (-i) evaluate every value assigned as arithmetic, and name references (-n) can name a subscript: not allowed when only some commands are", d.Variant.Value, w.text)
			}
			if s.allow && codeInValue.MatchString(w.text) {
				s.refuse("%s %s: a name or value holding shell code is not allowed when only some commands are", d.Variant.Value, w.text)
			}
			k.words = append(k.words, w)
		case a.Naked && a.Name != nil:
			k.words = append(k.words, word{text: a.Name.Value, static: a.Index == nil})
		default:
			as := assignOf(a)
			k.words = append(k.words, word{text: as.name + "=" + as.value, static: as.static})
			k.assigns = append(k.assigns, as)
		}
	}
	s.calls = append(s.calls, k)
}

// declFlags are declare's -i and -n, alone or among others.
var declFlags = regexp.MustCompile(`^[-+][a-zA-Z]*[in]`)

// param refuses the parameter expansions that run a value as code:
// ${X@P} (prompt expansion runs $(...) in X), ${!X} (X may name a
// subscript, which is arithmetic), and subscripts and offsets that are
// arithmetic on variables.
func (s *scanner) param(p *syntax.ParamExp) {
	switch {
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && strings.Contains(p.Exp.Word.Lit(), "P"):
		s.refuse("${%s@P} expands the value as a prompt, which runs the $(...) it holds: not allowed when only some commands are", paramName(p))
	case p.Excl && p.Names == 0:
		s.refuse("${!%s} (indirect expansion) can evaluate a subscript named in a value: not allowed when only some commands are", paramName(p))
	case p.Index != nil && !arithmLiteral(p.Index):
		s.arithmRefusal()
	case p.Slice != nil && (p.Slice.Offset != nil && !arithmLiteral(p.Slice.Offset) || p.Slice.Length != nil && !arithmLiteral(p.Slice.Length)):
		s.arithmRefusal()
	}
}

func paramName(p *syntax.ParamExp) string {
	if p.Param != nil {
		return p.Param.Value
	}
	return "..."
}

// arithm refuses arithmetic that reads a variable: bash evaluates a
// variable's value as arithmetic in turn, and a subscript in it
// (a[$(id)]) runs a command.
func (s *scanner) arithm(x syntax.ArithmExpr) {
	if s.allow && !arithmLiteral(x) {
		s.arithmRefusal()
	}
}

func (s *scanner) arithmRefusal() {
	if s.allow {
		s.refuse("arithmetic on a variable ($((X)), ((X)), let, [[ X -eq N ]], ${a[X]}) evaluates the value as code, where a[$(...)] runs a command: not allowed when only some commands are; compute with literal numbers or in a script file")
	}
}

// arithmLiteral reports whether an arithmetic expression is made of
// numbers only.
func arithmLiteral(x syntax.ArithmExpr) bool {
	ok := true
	syntax.Walk(x, func(n syntax.Node) bool {
		if w, isWord := n.(*syntax.Word); isWord {
			if !isNumber(w) {
				ok = false
			}
			return false
		}
		return ok
	})
	return ok
}

var number = regexp.MustCompile(`^(?:0[xX][0-9a-fA-F]+|[0-9]+(?:#[0-9a-zA-Z@_]+)?)$`)

func isNumber(w *syntax.Word) bool { return number.MatchString(w.Lit()) }

// writeRedir reports a redirection that writes a file.
func writeRedir(r *syntax.Redirect) (danger, bool) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
	case syntax.DplOut:
		// >&2, 2>&1 and >&- copy or close descriptors; >&FILE writes FILE.
		if w := wordOf(r.Word); w.static && (number.MatchString(w.text) || w.text == "-") {
			return danger{}, false
		}
	default:
		return danger{}, false
	}
	w := wordOf(r.Word)
	if w.static {
		switch w.text {
		case "/dev/null", "/dev/stdout", "/dev/stderr":
			return danger{}, false
		}
	}
	op := r.Op.String()
	triggers := []string{op}
	if r.N != nil {
		triggers = append(triggers, r.N.Value+op)
	}
	return danger{what: fmt.Sprintf("output redirection (%s) writes a file", redirText(r)), triggers: triggers}, true
}

// stdinRedir is the operator that feeds a call's standard input from the
// line or a file (<<<, <<, <<-, <), or "".
func stdinRedir(c call) string {
	for _, r := range c.redirs {
		switch r.Op {
		case syntax.WordHdoc, syntax.Hdoc, syntax.DashHdoc, syntax.RdrIn:
			if r.N == nil || r.N.Value == "0" {
				return r.Op.String()
			}
		}
	}
	return ""
}

// stdinOf is how the line feeds a call's standard input: its own
// redirection, a pipe or an enclosing redirection, or "".
func stdinOf(c call) string {
	if op := inputRedir(c.redirs); op != "" {
		return op
	}
	return c.fed
}

// commandName is the base name of a call's program.
func commandName(c call) string {
	if len(c.words) == 0 {
		return ""
	}
	return filepath.Base(c.words[0].text)
}

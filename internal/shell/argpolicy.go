package shell

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Per-command argument policy, in the manner of UFO's Linux agent: an
// allowed command may still be refused for what its arguments make it do.
// An interpreter given its program inline (-c, -e, -Ic, -X utf8 -c ...),
// on standard input (-, /dev/stdin, a here-string or a pipe) or as a
// module (-m) runs code no pattern can read; a redirection, tee, find
// -delete/-fprint/-fls or sort -o writes files that "cat *" or "sort *"
// never meant to. These are the dangers a pattern must name. The table
// of other tools' risky options (sort, tar, git, ssh, sed ...) is in
// argtable.go.

type optKind int

const (
	optFlag   optKind = iota // no argument
	optArg                   // takes the next word (or =value)
	optCode                  // its argument is a program
	optModule                // its argument names code to load
	optInfo                  // prints something and exits
	optStdin                 // reads the program from standard input
	optFile                  // its argument is a program file (awk -f), code no pattern reads
	optWrite                 // writes a file (gawk --profile, --dump-variables)
	optLongW                 // -W NAME is --NAME (awk)
)

// interpreter describes how a language's command line names its program.
type interpreter struct {
	short map[byte]optKind
	long  map[string]optKind
	// program: the first operand is the program text itself (awk), unless
	// a program file was given (-f).
	program bool
}

func shorts(kinds ...any) map[byte]optKind {
	m := map[byte]optKind{}
	for i := 0; i+1 < len(kinds); i += 2 {
		for _, c := range []byte(kinds[i].(string)) {
			m[c] = kinds[i+1].(optKind)
		}
	}
	return m
}

var (
	python = interpreter{
		short: shorts("c", optCode, "m", optModule, "XWQ", optArg, "Vh?", optInfo),
		long:  map[string]optKind{"--check-hash-based-pycs": optArg, "--version": optInfo, "--help": optInfo, "--help-all": optInfo},
	}
	perl = interpreter{
		short: shorts("eE", optCode, "mM", optModule, "Ix", optArg, "vVh", optInfo),
		long:  map[string]optKind{"--version": optInfo, "--help": optInfo},
	}
	ruby = interpreter{
		short: shorts("e", optCode, "r", optModule, "ICEFW", optArg, "vh", optInfo),
		long:  map[string]optKind{"--version": optInfo, "--help": optInfo, "--require": optModule},
	}
	node = interpreter{
		short: shorts("ep", optCode, "r", optModule, "vh", optInfo),
		long: map[string]optKind{"--eval": optCode, "--print": optCode, "--require": optModule, "--import": optModule,
			"--loader": optModule, "--experimental-loader": optModule, "--input-type": optArg, "--version": optInfo, "--help": optInfo},
	}
	php = interpreter{
		short: shorts("rBRE", optCode, "a", optStdin, "cdzt", optArg, "vh", optInfo),
		long:  map[string]optKind{"--version": optInfo, "--help": optInfo},
	}
	lua = interpreter{
		short: shorts("e", optCode, "l", optModule, "i", optStdin, "v", optInfo),
	}
	// awk: -f, -E and -i name program files and -l an extension (a shared
	// library), -p, -d and -o write files, -D reads debugger commands from
	// standard input; -W NAME is --NAME.
	awk = interpreter{
		short: shorts("e", optCode, "vF", optArg, "fEi", optFile, "l", optModule, "pdo", optWrite, "D", optStdin, "W", optLongW),
		long: map[string]optKind{"--source": optCode, "--file": optFile, "--exec": optFile, "--include": optFile, "--load": optModule,
			"--profile": optWrite, "--dump-variables": optWrite, "--pretty-print": optWrite, "--debug": optStdin,
			"--assign": optArg, "--field-separator": optArg, "--version": optInfo, "--help": optInfo},
		program: true,
	}
	osascript = interpreter{short: shorts("e", optCode)}
)

var (
	pythonName = regexp.MustCompile(`^(?:python|pypy)[0-9.]*$`)
	perlName   = regexp.MustCompile(`^perl[0-9.]*$`)
	rubyName   = regexp.MustCompile(`^ruby[0-9.]*$`)
	phpName    = regexp.MustCompile(`^php[0-9.]*$`)
	luaName    = regexp.MustCompile(`^(?:lua[0-9.]*|luajit)$`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// interpreterOf names the interpreters by their commands' base names.
func interpreterOf(name string) (interpreter, bool) {
	switch {
	case pythonName.MatchString(name):
		return python, true
	case perlName.MatchString(name):
		return perl, true
	case rubyName.MatchString(name):
		return ruby, true
	case name == "node" || name == "nodejs":
		return node, true
	case phpName.MatchString(name):
		return php, true
	case luaName.MatchString(name):
		return lua, true
	case name == "awk" || name == "gawk" || name == "mawk" || name == "nawk":
		return awk, true
	case name == "osascript":
		return osascript, true
	}
	return interpreter{}, false
}

// nameBuiltins are the bash builtins that take variable names (printf
// -v, read, unset, test -v, ...).
var nameBuiltins = map[string]bool{"printf": true, "read": true, "unset": true, "test": true, "[": true, "mapfile": true,
	"readarray": true, "wait": true, "getopts": true, "declare": true, "typeset": true, "local": true, "export": true, "readonly": true}

var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "rbash": true}

// stdinPaths are script paths that are standard input.
var stdinPath = regexp.MustCompile(`^(?:/dev/stdin|/dev/fd/\d+|/proc/(?:self|thread-self|\d+)/fd/\d+)$`)

// awkRuns finds, in an awk program, what runs commands or writes files:
// system(), a pipe to or from a command, print into a file, and gawk's
// @load, @include and indirect calls (@f(), where f may be "system").
var awkRuns = regexp.MustCompile(`system|\||>|@[A-Za-z_]`)

// longKind is what a long option does: an exact name, else the risky
// option it is a prefix of (getopt takes unique prefixes), else the one
// option it is a prefix of.
func (ip interpreter) longKind(opt string) optKind {
	if k, ok := ip.long[opt]; ok || len(opt) < 3 {
		return k
	}
	var only []optKind
	for name, k := range ip.long {
		if strings.HasPrefix(name, opt) {
			switch k {
			case optCode, optModule, optStdin, optFile, optWrite:
				return k
			}
			only = append(only, k)
		}
	}
	if len(only) == 1 {
		return only[0]
	}
	return optFlag
}

// inspection is what a call does besides being itself.
type inspection struct {
	refusal string // what no pattern can allow
	dangers []danger
	nested  []call   // commands it runs (env X, find -exec X, xargs X)
	code    []string // shell code it runs (sh -c CODE, eval CODE)
}

func (in *inspection) add(what string, triggers ...string) {
	in.dangers = append(in.dangers, danger{what: what, triggers: triggers})
}

// inspect looks at one call's arguments.
func inspect(c call) inspection {
	var in inspection
	for _, r := range c.redirs {
		if d, ok := writeRedir(r); ok {
			in.dangers = append(in.dangers, d)
		}
	}
	if len(c.words) == 0 {
		return in
	}
	name := commandName(c)
	args := c.words[1:]
	if nameBuiltins[name] && (name != "printf" || len(args) > 0 && strings.HasPrefix(args[0].text, "-v")) {
		// A variable name given to these may carry a subscript, which bash
		// evaluates as arithmetic: a[$(cmd)] runs cmd.
		for _, a := range args {
			if codeInValue.MatchString(a.text) {
				in.refusal = fmt.Sprintf("%s %s: a variable name holding shell code ($(...) in a subscript runs it) is not allowed when only some commands are", name, a.text)
				return in
			}
		}
	}
	if ip, ok := interpreterOf(name); ok {
		in.interpreter(c, name, ip)
		return in
	}
	if r, ok := toolRules[name]; ok {
		in.tool(c, name, r)
		return in
	}
	switch {
	case shells[name]:
		in.shell(c, name)
	case name == "eval":
		in.eval(c)
	case name == "trap" && len(args) > 0:
		// trap CODE SIGNAL... runs CODE later.
		if !args[0].static {
			in.dynamic(name, args[0])
		} else if args[0].text != "-" && !strings.HasPrefix(args[0].text, "-") {
			in.code = append(in.code, args[0].text)
		}
	case (name == "source" || name == ".") && len(args) > 0:
		in.script(name, args[0]) // a script file, unless it is standard input
	case name == "find":
		in.find(c)
	case name == "tee":
		for _, a := range args {
			if !a.static || !strings.HasPrefix(a.text, "-") && a.text != "/dev/null" && a.text != "/dev/stdout" && a.text != "/dev/stderr" {
				in.add(fmt.Sprintf("tee writes the file %s", a.text), "tee")
				break
			}
		}
	default:
		if w, ok := wrappers[name]; ok {
			in.wrapper(c, name, w)
		}
	}
	return in
}

// dynamic is a word whose value is known only when the command runs: it
// could be any flag of a command whose flags matter.
func (in *inspection) dynamic(name string, w word) {
	in.add(fmt.Sprintf("%s gets %s, whose value is known only when it runs (it could be any option)", name, w.text))
}

func (in *inspection) interpreter(c call, name string, ip interpreter) {
	args := c.words[1:]
	program, info, programFile := false, false, false
	for i := 0; i < len(args) && !program; i++ {
		w := args[i]
		if !w.static {
			in.dynamic(name, w)
			return
		}
		a := w.text
		kind := optFlag
		switch {
		case a == "-":
			in.add(fmt.Sprintf("%s reads its program from standard input (-)", name), "-")
			return
		case a == "--":
			if i+1 < len(args) {
				in.script(name, args[i+1])
			}
			program = true
			continue
		case strings.HasPrefix(a, "--"):
			opt, _, hasValue := strings.Cut(a, "=")
			kind = ip.longKind(opt)
			if (kind == optArg || kind == optFile || ip.program && (kind == optCode || kind == optModule)) && !hasValue {
				i++
			}
			switch kind {
			case optInfo:
				info = true
			case optCode, optModule:
				in.program(name, kind, a, opt)
				if !ip.program {
					return
				}
				programFile = programFile || kind == optCode
			case optFile, optWrite, optStdin:
				programFile = programFile || kind == optFile
				in.optionDanger(name, kind, a, opt)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				k := ip.short[a[j]]
				flag := "-" + string(a[j])
				// takesNext: the option's value is the rest of the word,
				// or the next word.
				takesNext := false
				switch k {
				case optCode, optModule:
					in.program(name, k, a, flag)
					if !ip.program {
						return
					}
					programFile = programFile || k == optCode
					takesNext = true
				case optStdin:
					in.optionDanger(name, k, a, flag)
					if !ip.program {
						return
					}
				case optWrite:
					in.optionDanger(name, k, a, flag)
				case optFile:
					programFile = true
					in.optionDanger(name, k, a, flag)
					takesNext = true
				case optArg:
					takesNext = true
				case optLongW:
					// -W NAME[=VALUE] (or -WNAME) is --NAME.
					v, shown := a[j+1:], a
					if v == "" && i+1 < len(args) {
						i++
						if !args[i].static {
							in.dynamic(name, args[i])
							return
						}
						v = args[i].text
						shown = a + " " + v
					}
					opt, _, _ := strings.Cut(v, "=")
					switch lk := ip.longKind("--" + opt); lk {
					case optCode, optModule:
						programFile = programFile || lk == optCode
						in.program(name, lk, shown, flag)
					case optFile, optWrite, optStdin:
						programFile = programFile || lk == optFile
						in.optionDanger(name, lk, shown, flag)
					case optInfo:
						info = true
					}
				case optInfo:
					info = true
					continue
				default:
					continue
				}
				if takesNext && j == len(a)-1 {
					i++
				}
				break
			}
		default:
			// The first operand: the program itself (awk), or its file.
			if ip.program && !programFile {
				if awkRuns.MatchString(a) {
					in.add(fmt.Sprintf("the %s program %q can run commands or write files (system, |, >)", name, a))
				}
			} else {
				in.script(name, w)
			}
			program = true
		}
	}
	if program || info || programFile {
		return
	}
	// No program named: it reads one from standard input (a pipe, a
	// here-string, a heredoc).
	if op := stdinRedir(c); op != "" {
		in.add(fmt.Sprintf("%s reads its program from standard input (%s)", name, op), op)
		return
	}
	in.add(fmt.Sprintf("%s with no program reads one from standard input", name))
}

// optionDanger records an option that names a program file, writes a
// file or reads code from standard input.
func (in *inspection) optionDanger(name string, kind optKind, word, flag string) {
	switch kind {
	case optFile:
		in.add(fmt.Sprintf("%s %s runs the program in a file, which no pattern can read", name, word), word, flag)
	case optWrite:
		in.add(fmt.Sprintf("%s %s writes a file", name, word), word, flag)
	case optStdin:
		in.add(fmt.Sprintf("%s %s reads code from standard input", name, word), word, flag)
	}
}

// program records an inline program or a module to load.
func (in *inspection) program(name string, kind optKind, word, flag string) {
	if kind == optModule {
		in.add(fmt.Sprintf("%s %s loads a module, code no pattern can read", name, word), word, flag)
		return
	}
	in.add(fmt.Sprintf("%s %s runs inline code, which no pattern can read", name, word), word, flag)
}

// script judges a program file's name: standard input by another name is
// code on standard input.
func (in *inspection) script(name string, w word) {
	if !w.static {
		in.dynamic(name, w)
		return
	}
	if stdinPath.MatchString(w.text) {
		in.add(fmt.Sprintf("%s reads its program from standard input (%s)", name, w.text), w.text)
	}
}

// shell: sh -c CODE runs code that is checked as a command line of its
// own; a script from standard input cannot be.
func (in *inspection) shell(c call, name string) {
	args := c.words[1:]
	withCode := false
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.static {
			in.dynamic(name, w)
			return
		}
		a := w.text
		switch {
		case a == "-" || a == "--":
			continue
		case a == "--rcfile" || a == "--init-file":
			i++
		case strings.HasPrefix(a, "--"):
		case (strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+")) && len(a) > 1:
			if strings.ContainsAny(a[1:], "oO") {
				i++ // -o OPTION
			}
			if strings.Contains(a[1:], "s") && a[0] == '-' {
				in.add(fmt.Sprintf("%s %s reads its script from standard input", name, a), a)
				return
			}
			if strings.Contains(a[1:], "c") && a[0] == '-' {
				withCode = true
			}
		default:
			if withCode {
				in.code = append(in.code, a)
				return
			}
			in.script(name, w) // a script file, as any program is
			return
		}
	}
	if withCode {
		return // sh -c with no code does nothing
	}
	if op := stdinRedir(c); op != "" {
		in.add(fmt.Sprintf("%s reads its script from standard input (%s)", name, op), op)
		return
	}
	in.add(fmt.Sprintf("%s with no script reads one from standard input", name))
}

// eval runs its arguments, joined, as a command line.
func (in *inspection) eval(c call) {
	var code []string
	for _, w := range c.words[1:] {
		if !w.static {
			in.dynamic("eval", w)
			return
		}
		code = append(code, w.text)
	}
	in.code = append(in.code, strings.Join(code, " "))
}

// find: -delete and the -f* actions write; -exec and -ok run a command,
// which is checked (with {} as a file name).
func (in *inspection) find(c call) {
	args := c.words[1:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.static {
			in.dynamic("find", w)
			return
		}
		switch a := w.text; a {
		case "-delete":
			in.add("find -delete removes files", a)
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			in.add(fmt.Sprintf("find %s writes a file", a), a)
		case "-exec", "-execdir", "-ok", "-okdir":
			end := i + 1
			for end < len(args) && !(args[end].static && (args[end].text == ";" || args[end].text == "+")) {
				end++
			}
			if end > i+1 {
				in.nested = append(in.nested, call{words: args[i+1 : end], src: joinWords(args[i+1 : end]), fed: stdinOf(c)})
			}
			i = end
		}
	}
}

// wrapper describes a command that runs the rest of its line as a
// command.
type wrapper struct {
	short      map[byte]optKind
	long       map[string]optKind
	positional int  // operands before the command (timeout's duration)
	assigns    bool // NAME=VALUE words set the command's environment (env, sudo)
	appends    bool // adds words from its input (xargs)
	shellCode  byte // this option's argument is shell code (env -S)
}

var wrappers = map[string]wrapper{
	"env":      {short: shorts("uC", optArg), long: map[string]optKind{"--unset": optArg, "--chdir": optArg}, assigns: true, shellCode: 'S'},
	"nice":     {short: shorts("n", optArg), long: map[string]optKind{"--adjustment": optArg}},
	"nohup":    {},
	"setsid":   {},
	"stdbuf":   {short: shorts("ioe", optArg)},
	"timeout":  {short: shorts("sk", optArg), long: map[string]optKind{"--signal": optArg, "--kill-after": optArg}, positional: 1},
	"sudo":     {short: shorts("ughpCDrtTU", optArg), assigns: true},
	"doas":     {short: shorts("uC", optArg)},
	"command":  {},
	"builtin":  {},
	"exec":     {short: shorts("a", optArg)},
	"ionice":   {short: shorts("cnpt", optArg)},
	"taskset":  {positional: 1},
	"chrt":     {positional: 1},
	"unbuffer": {},
	"xargs": {short: shorts("ILnPsdEa", optArg), long: map[string]optKind{"--replace": optArg, "--max-args": optArg,
		"--max-procs": optArg, "--delimiter": optArg, "--arg-file": optArg, "--max-lines": optArg}, appends: true},
}

func (in *inspection) wrapper(c call, name string, w wrapper) {
	args := c.words[1:]
	positional := w.positional
	i := 0
	for ; i < len(args); i++ {
		a := args[i]
		if !a.static {
			in.dynamic(name, a)
			return
		}
		t := a.text
		if t == "--" {
			i++
			break
		}
		if w.assigns && envName.MatchString(t) {
			k, v, _ := strings.Cut(t, "=")
			in.nestedAssign(name, k, v)
			continue
		}
		if strings.HasPrefix(t, "--") {
			opt, _, hasValue := strings.Cut(t, "=")
			if opt == "--split-string" && w.shellCode != 0 {
				in.splitString(name, t, hasValue, args, &i)
				continue
			}
			if w.long[opt] == optArg && !hasValue {
				i++
			}
			continue
		}
		if strings.HasPrefix(t, "-") && len(t) > 1 {
			for j := 1; j < len(t); j++ {
				if t[j] == w.shellCode && w.shellCode != 0 {
					if j < len(t)-1 {
						in.code = append(in.code, t[j+1:])
					} else if i+1 < len(args) {
						i++
						if !args[i].static {
							in.dynamic(name, args[i])
							return
						}
						in.code = append(in.code, args[i].text)
					}
					j = len(t)
					continue
				}
				if w.short[t[j]] == optArg {
					if j == len(t)-1 {
						i++
					}
					j = len(t)
				}
			}
			continue
		}
		if positional > 0 {
			positional--
			continue
		}
		break
	}
	if i >= len(args) {
		return
	}
	words := slices.Clone(args[i:])
	if w.appends {
		words = append(words, word{text: "ARGS"}) // what xargs reads is not known
	}
	in.nested = append(in.nested, call{words: words, src: joinWords(words), fed: stdinOf(c)})
}

func (in *inspection) splitString(name, t string, hasValue bool, args []word, i *int) {
	if _, v, ok := strings.Cut(t, "="); ok && hasValue {
		in.code = append(in.code, v)
		return
	}
	if *i+1 < len(args) {
		*i++
		in.code = append(in.code, args[*i].text)
	}
}

// nestedAssign is an assignment a wrapper makes (env NAME=VALUE cmd).
func (in *inspection) nestedAssign(name, k, v string) {
	if why := envRefusal(k, v); why != "" && in.refusal == "" {
		in.refusal = fmt.Sprintf("%s %s=...: %s", name, k, why)
	}
}

func joinWords(ws []word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.text
	}
	return strings.Join(parts, " ")
}

package shell

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The risky forms of common tools, one table: a tool's options as getopt
// reads them, the options that make it run a program, load code, write a
// file or change the host, and a check for what its operands or option
// values do. Under an allow list each is a danger that a pattern must
// name, as sort -o is: "sort *" runs sort -n, not sort -o out or sort
// --compress-program=sh; "sort -o *" allows the first.

// Kinds of option values.
const (
	valNone     = iota // a flag
	valRequired        // the rest of the word, or the next word
	valAttached        // only the rest of the word (-Iseconds, --check=quiet)
)

// toolRule is one tool's entry in the table.
type toolRule struct {
	// short is getopt's letters: "o:" takes a value, "I::" a value only
	// attached, "c" none. Unknown letters are flags.
	short string
	// long is the long options: "output=" takes a value, "check?" a value
	// only after =, "debug" none. A unique prefix stands for the option,
	// as GNU getopt allows; a prefix of a risky option is taken as it.
	long map[string]int
	// inOrder: options end at the first operand (git's own, before its
	// subcommand); otherwise they may follow operands, as getopt permutes.
	inOrder bool
	// risky maps an option ("-o", "--output") to what it does, said after
	// the option ("writes its output to a file").
	risky map[string]string
	// check judges operands and option values.
	check func(in *inspection, name string, c call, p parsedArgs)
}

// parsedOpt is one option as given.
type parsedOpt struct {
	word     string // the word it is in: "-ro", "--out=x"
	given    string // the option as written: "-o", "--out"
	name     string // the option it stands for: "-o", "--output"
	value    string
	hasValue bool
	separate bool // the value is the next word
	dynamic  bool // the value is known only when the command runs
}

type parsedArgs struct {
	opts     []parsedOpt
	operands []word
	stop     int // with inOrder, the index of the first operand
}

func (p parsedArgs) has(names ...string) bool {
	for _, o := range p.opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

// rule builds a table entry from getopt-like specs: long is a space-
// separated list of names ending in "=" (a value), "?" (an optional value
// after =) or nothing (a flag).
func rule(short, long string, risky map[string]string, check func(*inspection, string, call, parsedArgs)) *toolRule {
	r := &toolRule{short: short, long: map[string]int{}, risky: risky, check: check}
	for _, l := range strings.Fields(long) {
		switch {
		case strings.HasSuffix(l, "="):
			r.long[strings.TrimSuffix(l, "=")] = valRequired
		case strings.HasSuffix(l, "?"):
			r.long[strings.TrimSuffix(l, "?")] = valAttached
		default:
			r.long[l] = valNone
		}
	}
	for name := range risky {
		if strings.HasPrefix(name, "--") {
			if _, ok := r.long[name[2:]]; !ok {
				panic("shell: risky option " + name + " is not among the long options")
			}
		} else if len(name) != 2 || !strings.Contains(short, name[1:]) {
			panic("shell: risky option " + name + " is not among the short options")
		}
	}
	return r
}

func (r *toolRule) shortKind(c byte) int {
	if c == ':' {
		return valNone
	}
	i := strings.IndexByte(r.short, c)
	switch {
	case i < 0:
		return valNone
	case strings.HasPrefix(r.short[i+1:], "::"):
		return valAttached
	case strings.HasPrefix(r.short[i+1:], ":"):
		return valRequired
	}
	return valNone
}

// resolve names the long option that given stands for: itself, the risky
// option it is a prefix of, or the one option it is a prefix of.
func (r *toolRule) resolve(given string) (string, int) {
	if k, ok := r.long[given]; ok || given == "" {
		return given, k
	}
	var names []string
	for name := range r.long {
		if strings.HasPrefix(name, given) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if _, bad := r.risky["--"+name]; bad {
			return name, r.long[name]
		}
	}
	if len(names) == 1 {
		return names[0], r.long[names[0]]
	}
	return given, valNone
}

// parse reads args as getopt would. A word known only when the command
// runs could be any option: it is returned, unless it is the value of an
// option (which is then marked dynamic).
func (r *toolRule) parse(args []word) (p parsedArgs, dyn *word) {
	p.stop = len(args)
	value := func(o *parsedOpt, i *int) {
		*i++
		o.value, o.hasValue, o.separate, o.dynamic = args[*i].text, true, true, !args[*i].static
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.static {
			return p, &args[i]
		}
		a := w.text
		switch {
		case a == "--":
			p.stop = i + 1
			for j := i + 1; j < len(args); j++ {
				if !args[j].static {
					return p, &args[j]
				}
				p.operands = append(p.operands, args[j])
			}
			return p, nil
		case strings.HasPrefix(a, "--"):
			given, val, has := strings.Cut(a[2:], "=")
			name, kind := r.resolve(given)
			o := parsedOpt{word: a, given: "--" + given, name: "--" + name, value: val, hasValue: has}
			if kind == valRequired && !has && i+1 < len(args) {
				value(&o, &i)
			}
			p.opts = append(p.opts, o)
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				o := parsedOpt{word: a, given: "-" + a[j:j+1], name: "-" + a[j:j+1]}
				kind := r.shortKind(a[j])
				if kind == valNone {
					p.opts = append(p.opts, o)
					continue
				}
				if j+1 < len(a) {
					o.value, o.hasValue = a[j+1:], true
				} else if kind == valRequired && i+1 < len(args) {
					value(&o, &i)
				}
				p.opts = append(p.opts, o)
				break
			}
		default:
			if r.inOrder {
				p.stop = i
				return p, nil
			}
			p.operands = append(p.operands, w)
		}
	}
	return p, nil
}

// shown is the option with its value if that is a word of its own.
func (o parsedOpt) shown() string {
	if o.separate {
		return o.word + " " + o.value
	}
	return o.word
}

// triggers are the words a pattern may name the option by: the word as
// written first, then the option as given and as it stands.
func (o parsedOpt) triggers() []string {
	out := []string{o.word}
	for _, t := range []string{o.given, o.name} {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// tool judges a call to a tool of the table.
func (in *inspection) tool(c call, name string, r *toolRule) {
	p, dyn := r.parse(c.words[1:])
	if dyn != nil {
		in.dynamic(name, *dyn)
		return
	}
	in.riskyOpts(name, r, p)
	if r.check != nil {
		r.check(in, name, c, p)
	}
}

func (in *inspection) riskyOpts(name string, r *toolRule, p parsedArgs) {
	for _, o := range p.opts {
		if what, ok := r.risky[o.name]; ok {
			in.add(fmt.Sprintf("%s %s %s", name, o.shown(), what), o.triggers()...)
		}
	}
}

// toolRules are the tools whose options are judged, by base name.
var toolRules = map[string]*toolRule{}

func init() {
	add := func(r *toolRule, names ...string) {
		for _, n := range names {
			toolRules[n] = r
		}
	}
	add(rule("bcCdfghiMmno:rRsS:t:T:uVzk:", "ignore-leading-blanks check? dictionary-order debug files0-from= ignore-case "+
		"general-numeric-sort human-numeric-sort ignore-nonprinting key= merge month-sort numeric-sort output= random-sort "+
		"random-source= reverse sort= stable buffer-size= field-separator= temporary-directory= unique version-sort "+
		"zero-terminated compress-program= parallel= batch-size= help version",
		map[string]string{
			"-o": "writes its output to a file", "--output": "writes its output to a file",
			"--compress-program": "runs the program it names (to compress temporary files)",
		}, nil), "sort")
	add(rule("cdDf:is:uw:z", "count repeated all-repeated? skip-fields= skip-chars= check-chars= group? ignore-case unique "+
		"zero-terminated help version", nil, uniqOutput), "uniq")
	add(rule("d:f:I::r:Rs:u", "date= debug file= iso-8601? reference= resolution rfc-email rfc-822 rfc-2822 rfc-3339= set= "+
		"universal utc uct help version",
		map[string]string{"-s": "sets the system clock", "--set": "sets the system clock"}, dateOperand), "date")
	add(rule("aAbdfF:iIsyvVh", "alias all-fqdns boot domain fqdn long file= ip-address all-ip-addresses short yp nis verbose version help",
		map[string]string{"-F": "sets the host name from a file", "--file": "sets the host name from a file"}, hostnameOperand),
		"hostname", "domainname", "nisdomainname", "ypdomainname")
	add(rule("HPh", "host= transient static pretty no-ask-password json= help version", nil, ctlSetter), "hostnamectl", "timedatectl")
	add(rule("nrsuEzi::e:f:l:", "in-place? expression= file= line-length= null-data zero-terminated quiet silent regexp-extended "+
		"separate sandbox debug posix unbuffered binary follow-symlinks help version",
		map[string]string{
			"-i": "edits files in place", "--in-place": "edits files in place",
			"-f": "reads its script from a file, which no pattern can read", "--file": "reads its script from a file, which no pattern can read",
		}, sedScript), "sed")
	tarRuns := "runs the command it names"
	add(rule("AacdrtuxC:f:b:g:H:I:F:K:L:N:T:V:X:jJzZvkmopPsSGhiklMOwWB",
		"file= directory= exclude= exclude-from= files-from= transform= xform= owner= group= mode= mtime= format= label= "+
			"blocking-factor= record-size= tape-length= newer= after-date= newer-mtime= listed-incremental= strip-components= "+
			"use-compress-program= to-command= checkpoint-action= info-script= new-volume-script= rsh-command= rmt-command= "+
			"checkpoint? suffix= backup? index-file= volno-file= sort= starting-file= occurrence? warning= quoting-style= level= "+
			"hole-detection= pax-option= exclude-tag= exclude-tag-under= exclude-tag-all= exclude-vcs exclude-vcs-ignores "+
			"to-stdout totals? gzip bzip2 xz lzma lzip lzop zstd compress auto-compress create extract list append update "+
			"diff compare delete verbose verify",
		map[string]string{
			"-I": tarRuns + " to compress", "--use-compress-program": tarRuns + " to compress",
			"-F": tarRuns + " at the end of each volume", "--info-script": tarRuns + " at the end of each volume",
			"--new-volume-script": tarRuns + " at the end of each volume",
			"--to-command":        tarRuns + " for each file it extracts",
			"--checkpoint-action": "can run a command at each checkpoint (exec=)",
			"--rsh-command":       tarRuns + " to reach a remote archive", "--rmt-command": tarRuns + " on the remote host",
		}, tarOldOptions), "tar", "gtar")
	add(rule("b:n:t:x:i:O:P:s:", "unzip-command= output-file= password= temp-path= suffixes= split-size= help version",
		map[string]string{"--unzip-command": "runs the command it names to test the archive"}, zipTT), "zip")
	sshKey := map[string]string{
		"-F": "reads a configuration file, which can name commands to run (ProxyCommand, LocalCommand, Match exec)",
	}
	add(rule("46AaCfGgKkMNnqsTtVvXxYyB:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:", "", mergeRisks(sshKey, map[string]string{
		"-I": "loads a PKCS#11 library, code of the caller's choosing",
		"-E": "writes its log to a file",
	}), sshOptions), "ssh")
	add(rule("346ABCOpqRrsTvc:D:F:i:J:l:o:P:S:X:", "", mergeRisks(sshKey, map[string]string{
		"-S": "runs the program it names to connect",
	}), sshOptions), "scp")
	add(rule("46AaCfNpqrvB:b:c:D:F:i:J:l:o:P:R:S:s:X:", "", mergeRisks(sshKey, map[string]string{
		"-S": "runs the program it names to connect",
		"-D": "runs the program it names as the SFTP server",
		"-b": "runs the commands of a batch file (! runs a local command)",
	}), stdinCommands(sshOptions)), "sftp")
	vimRisks := map[string]string{
		"-c": "runs an Ex command (:!cmd runs a shell command)", "--cmd": "runs an Ex command (:!cmd runs a shell command)",
		"-S": "sources a script file", "-s": "reads keys from a file (or, in Ex mode, is quiet)", "-u": "reads a vimrc of the caller's choosing",
		"-U": "reads a gvimrc of the caller's choosing", "-w": "writes the keys typed to a file", "-W": "writes the keys typed to a file",
		"--remote-send": "sends keys to a running Vim", "--remote-expr": "evaluates an expression in a running Vim",
		"--startuptime": "writes timings to a file",
	}
	add(rule("c:S:s:u:U:w:W:T:i:t:", "cmd= remote-send= remote-expr= startuptime= servername= clean noplugin version help", vimRisks,
		stdinCommands(vimPlus)), "vim", "vi", "nvim", "ex", "view", "rview", "rvim", "vimdiff", "gvim", "evim", "vimx")
	add(rule("", "", nil, stdinCommands(nil)), "ed", "red")
	lessRisks := map[string]string{
		"-o": "writes what it shows to a file", "-O": "writes what it shows to a file",
		"--log-file": "writes what it shows to a file", "--LOG-FILE": "writes what it shows to a file",
		"-k": "reads key bindings, which can set LESSOPEN, from a file", "--lesskey-file": "reads key bindings, which can set LESSOPEN, from a file",
		"--lesskey-src": "reads key bindings, which can set LESSOPEN, from a file", "--lesskey-content": "sets key bindings, which can set LESSOPEN",
	}
	add(rule("b:h:j:k:o:O:p:P:t:T:x:y:z:#:D:", "log-file= LOG-FILE= lesskey-file= lesskey-src= lesskey-content= pattern= prompt= "+
		"tag= tag-file= tabs= window= shift= max-back-scroll= max-forw-scroll= buffers= jump-target= help version", lessRisks, pagerPlus), "less")
	add(rule("n:", "lines= help version", nil, pagerPlus), "more")
	add(rule("C:e:E:H::L:m:M:p:P:r:R:S:s:T::X::", "pager= html? config-file= extension= encoding= locale= systems= manpath= "+
		"preprocessor= prompt= recode= sections= troff-device? gxditview? help version",
		map[string]string{
			"-P": "runs the pager it names", "--pager": "runs the pager it names",
			"-H": "runs a browser", "--html": "runs a browser",
			"-C": "reads a configuration file of the caller's choosing", "--config-file": "reads a configuration file of the caller's choosing",
		}, nil), "man")
	rsyncRuns := "runs the program it names"
	add(rule("e:B:f:T:M:@:", "rsh= rsync-path= remote-option= write-batch= only-write-batch= read-batch= log-file= log-file-format= daemon "+
		"config= exclude= include= filter= files-from= exclude-from= include-from= temp-dir= partial-dir= compare-dest= "+
		"copy-dest= link-dest= backup-dir= suffix= chmod= chown= usermap= groupmap= timeout= contimeout= port= sockopts= "+
		"password-file= bwlimit= max-size= min-size= max-delete= block-size= checksum-choice= compress-choice= "+
		"compress-level= skip-compress= info= debug= out-format= protocol= iconv= modify-window= stop-after= stop-at= help version",
		map[string]string{
			"-e": rsyncRuns + " as its remote shell", "--rsh": rsyncRuns + " as its remote shell",
			"--rsync-path": rsyncRuns + " as the remote rsync",
			"-M":           "passes options to the remote rsync", "--remote-option": "passes options to the remote rsync",
			"--write-batch": "writes a batch file and a script", "--only-write-batch": "writes a batch file and a script",
			"--log-file": "writes its log to a file", "--daemon": "runs an rsync daemon", "--config": "reads a daemon configuration",
		}, nil), "rsync")
	add(gitGlobal, "git")
}

func mergeRisks(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// uniqOutput: uniq's second operand is the file it writes.
func uniqOutput(in *inspection, name string, c call, p parsedArgs) {
	if len(p.operands) < 2 {
		return
	}
	switch out := p.operands[1].text; out {
	case "-", "/dev/stdout", "/dev/stderr", "/dev/null":
	default:
		in.add(fmt.Sprintf("%s writes its output to the file %s (its second operand)", name, out))
	}
}

// dateOperand: an operand that is not +FORMAT sets the clock (MMDDhhmm).
func dateOperand(in *inspection, name string, c call, p parsedArgs) {
	for _, w := range p.operands {
		if !strings.HasPrefix(w.text, "+") {
			in.add(fmt.Sprintf("%s %s sets the system clock (an operand that is not +FORMAT)", name, w.text))
			return
		}
	}
}

// hostnameOperand: hostname NAME sets the host name (domainname NAME the
// NIS domain).
func hostnameOperand(in *inspection, name string, c call, p parsedArgs) {
	if len(p.operands) > 0 {
		in.add(fmt.Sprintf("%s %s sets the host's name", name, p.operands[0].text))
	}
}

// ctlSetter: hostnamectl and timedatectl change the host with their set-*
// verbs, and hostnamectl's hostname, icon-name, chassis, deployment and
// location verbs when given a value.
func ctlSetter(in *inspection, name string, c call, p parsedArgs) {
	if len(p.operands) == 0 {
		return
	}
	verb := p.operands[0].text
	setter := strings.HasPrefix(verb, "set-")
	if name == "hostnamectl" && len(p.operands) > 1 {
		setter = setter || slices.Contains([]string{"hostname", "icon-name", "chassis", "deployment", "location"}, verb)
	}
	if setter {
		in.add(fmt.Sprintf("%s %s changes the host's settings", name, verb), verb)
	}
}

// sedScript judges the script: e and s///e run commands, w, W and s///w
// write files (r and R only read, as sed's file operands do). --sandbox
// makes sed refuse them itself.
func sedScript(in *inspection, name string, c call, p parsedArgs) {
	if p.has("--sandbox") {
		return
	}
	var parts []string
	for _, o := range p.opts {
		if o.name == "-e" || o.name == "--expression" {
			if o.dynamic {
				in.add(fmt.Sprintf("%s gets the script %s, known only when it runs", name, o.value))
				return
			}
			parts = append(parts, o.value)
		}
	}
	if len(parts) == 0 && !p.has("-f", "--file") {
		if len(p.operands) == 0 {
			return
		}
		parts = append(parts, p.operands[0].text)
	}
	script := strings.Join(parts, "\n")
	cmds, err := sedCommands(script)
	if err != nil {
		in.add(fmt.Sprintf("%s: the policy cannot read the script %q (%v)", name, script, err))
		return
	}
	for _, k := range cmds {
		switch {
		case k.runs:
			in.add(fmt.Sprintf("the %s command %s runs a command", name, k.cmd))
		case k.writes:
			in.add(fmt.Sprintf("the %s command %s writes the file %s", name, k.cmd, k.arg))
		}
	}
}

// tarOldOptions: tar's first word, without a dash, is a bundle of
// options (tar czf, tar xIf PROG).
func tarOldOptions(in *inspection, name string, c call, p parsedArgs) {
	if len(c.words) < 2 || strings.HasPrefix(c.words[1].text, "-") {
		return
	}
	first := c.words[1].text
	for _, l := range first {
		opt := "-" + string(l)
		if what, ok := toolRules["tar"].risky[opt]; ok {
			in.add(fmt.Sprintf("%s %s (%s) %s", name, first, opt, what), first, opt)
			return
		}
	}
}

// zipTT: zip -TT CMD runs CMD to test the archive (a two-letter option).
func zipTT(in *inspection, name string, c call, p parsedArgs) {
	for _, w := range c.words[1:] {
		if strings.HasPrefix(w.text, "-") && !strings.HasPrefix(w.text, "--") && strings.Contains(w.text, "TT") {
			in.add(fmt.Sprintf("%s %s runs the command it names to test the archive", name, w.text), w.text, "-TT")
			return
		}
	}
}

// sshRiskyKeys are ssh_config keywords that run a command or load code.
var sshRiskyKeys = []string{"proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "include",
	"securitykeyprovider", "pkcs11provider", "match"}

// sshOptions judges -o KEY=VALUE (or "KEY VALUE").
func sshOptions(in *inspection, name string, c call, p parsedArgs) {
	for _, o := range p.opts {
		if o.name != "-o" {
			continue
		}
		key := strings.ToLower(strings.TrimSpace(o.value))
		if i := strings.IndexAny(key, "= \t"); i >= 0 {
			key = key[:i]
		}
		if o.dynamic || slices.Contains(sshRiskyKeys, key) {
			in.add(fmt.Sprintf("%s %s runs a command or loads code of the caller's choosing", name, o.shown()), o.word, "-o")
		}
	}
}

// stdinCommands adds, to a tool that reads commands from its standard
// input when that is not a terminal (vim, ex, ed, sftp), a danger when
// its input is fed by the line (a pipe, a here-string, a redirection).
func stdinCommands(next func(*inspection, string, call, parsedArgs)) func(*inspection, string, call, parsedArgs) {
	return func(in *inspection, name string, c call, p parsedArgs) {
		if op := stdinOf(c); op != "" {
			var triggers []string
			if inputRedir(c.redirs) != "" {
				// The call's own redirection is a word of its text; a pipe
				// or an enclosing redirection is not.
				triggers = append(triggers, op)
			}
			in.add(fmt.Sprintf("%s reads commands from its standard input (%s), where :!cmd or !cmd runs a command", name, op), triggers...)
		}
		if next != nil {
			next(in, name, c, p)
		}
	}
}

// safePlus are +N (a line) and +/pattern (a search): the + forms of vim,
// less and more that run nothing.
var safePlus = regexp.MustCompile(`^\+(?:[0-9]*|/[^\n\r]*)$`)

// vimPlus: vim +CMD runs an Ex command at start.
func vimPlus(in *inspection, name string, c call, p parsedArgs) {
	for _, w := range p.operands {
		if strings.HasPrefix(w.text, "+") && !safePlus.MatchString(w.text) {
			in.add(fmt.Sprintf("%s %s runs an Ex command when it starts (+!cmd runs a shell command)", name, w.text), w.text)
		}
	}
}

// pagerPlus: less +CMD and more +CMD run pager commands at start (less's !
// runs a shell command).
func pagerPlus(in *inspection, name string, c call, p parsedArgs) {
	for _, w := range p.operands {
		if strings.HasPrefix(w.text, "+") && !safePlus.MatchString(w.text) {
			in.add(fmt.Sprintf("%s %s runs pager commands when it starts (! runs a shell command)", name, w.text), w.text)
		}
	}
}

// git: its own options (-c, --config-env, --exec-path=DIR), then the
// subcommand's.
var gitGlobal = func() *toolRule {
	r := rule("C:c:hpPv", "exec-path? html-path man-path info-path paginate no-pager no-replace-objects bare git-dir= work-tree= "+
		"namespace= config-env= super-prefix= list-cmds= attr-source= literal-pathspecs glob-pathspecs noglob-pathspecs "+
		"icase-pathspecs no-optional-locks no-lazy-fetch no-advice version help",
		map[string]string{
			"-c":           "sets configuration, which can name a program git runs (alias.x=!cmd, core.pager, core.sshCommand)",
			"--config-env": "sets configuration, which can name a program git runs (alias.x=!cmd, core.pager, core.sshCommand)",
		}, gitSubcommand)
	r.inOrder = true
	return r
}()

var gitSubs = map[string]*toolRule{
	"clone": rule("u:c:o:b:j:", "upload-pack= config= template= origin= branch= depth= reference= separate-git-dir= jobs=", map[string]string{
		"-u": "runs the program it names", "--upload-pack": "runs the program it names",
		"-c": "sets the new repository's configuration, which can name programs git runs", "--config": "sets the new repository's configuration, which can name programs git runs",
		"--template": "installs hooks (programs git runs) from a directory",
	}, nil),
	"fetch":      rule("", "upload-pack= depth=", map[string]string{"--upload-pack": "runs the program it names"}, nil),
	"pull":       rule("", "upload-pack= depth=", map[string]string{"--upload-pack": "runs the program it names"}, nil),
	"fetch-pack": rule("", "upload-pack= exec= depth=", map[string]string{"--upload-pack": "runs the program it names", "--exec": "runs the program it names"}, nil),
	"ls-remote":  rule("u:", "upload-pack=", map[string]string{"-u": "runs the program it names", "--upload-pack": "runs the program it names"}, nil),
	"push":       rule("", "receive-pack= exec= repo=", map[string]string{"--receive-pack": "runs the program it names", "--exec": "runs the program it names"}, nil),
	"send-pack":  rule("", "receive-pack= exec=", map[string]string{"--receive-pack": "runs the program it names", "--exec": "runs the program it names"}, nil),
	"archive":    rule("o:", "exec= output= remote= format= prefix=", map[string]string{"--exec": "runs the program it names"}, nil),
	"rebase":     rule("x:s:X:", "exec= strategy= strategy-option= onto=", map[string]string{"-x": "runs the command it names after each commit", "--exec": "runs the command it names after each commit"}, nil),
	"difftool":   rule("x:t:", "extcmd= tool=", map[string]string{"-x": "runs the command it names", "--extcmd": "runs the command it names"}, nil),
	"grep":       rule("O::e:f:A:B:C:m:", "open-files-in-pager? max-depth= threads=", map[string]string{"-O": "runs a pager of the caller's choosing", "--open-files-in-pager": "runs a pager of the caller's choosing"}, nil),
	"bisect":     rule("", "", nil, gitVerb("run", "runs the command it names at each step")),
	"submodule":  rule("", "", nil, gitVerb("foreach", "runs the command it names in each submodule")),
	"config":     rule("ef:", "add replace-all edit unset unset-all rename-section remove-section get get-all get-regexp get-urlmatch list get-color get-colorbool file= blob= global system local worktree", nil, gitConfigWrite),
	"filter-branch": rule("", "", nil, func(in *inspection, name string, c call, p parsedArgs) {
		in.add("git filter-branch runs the shell code of its filters", "filter-branch")
	}),
}

// gitSubcommand judges --exec-path=DIR (git runs its programs from DIR)
// and the subcommand's options.
func gitSubcommand(in *inspection, name string, c call, p parsedArgs) {
	for _, o := range p.opts {
		if o.name == "--exec-path" && o.hasValue {
			in.add(fmt.Sprintf("git %s runs git's programs from a directory of the caller's choosing", o.word), o.word, "--exec-path")
		}
	}
	args := c.words[1:]
	if p.stop >= len(args) {
		return
	}
	sub := args[p.stop].text
	r, ok := gitSubs[sub]
	if !ok {
		return
	}
	sp, dyn := r.parse(args[p.stop+1:])
	if dyn != nil {
		in.dynamic("git "+sub, *dyn)
		return
	}
	in.riskyOpts("git "+sub, r, sp)
	if r.check != nil {
		r.check(in, "git "+sub, c, sp)
	}
}

func gitVerb(verb, what string) func(*inspection, string, call, parsedArgs) {
	return func(in *inspection, name string, c call, p parsedArgs) {
		if len(p.operands) > 0 && p.operands[0].text == verb {
			in.add(fmt.Sprintf("%s %s %s", name, verb, what), verb)
		}
	}
}

// gitConfigWrite: git config writes configuration (which can name
// programs git runs later: alias.x=!cmd, core.pager) unless it only
// reads.
func gitConfigWrite(in *inspection, name string, c call, p parsedArgs) {
	reads := p.has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool")
	verb := ""
	if len(p.operands) > 0 {
		verb = p.operands[0].text
	}
	writes := p.has("--add", "--replace-all", "--edit", "-e", "--unset", "--unset-all", "--rename-section", "--remove-section") ||
		slices.Contains([]string{"set", "unset", "edit", "rename-section", "remove-section"}, verb) ||
		!reads && verb != "get" && verb != "list" && len(p.operands) > 1
	if writes {
		in.add(fmt.Sprintf("%s writes git's configuration, which can name programs git runs (alias.x=!cmd, core.pager)", name), "config")
	}
}

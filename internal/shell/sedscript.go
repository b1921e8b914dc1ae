package shell

import (
	"fmt"
	"strings"
)

// sedCommand is a command of a sed script that reaches outside the text:
// e and s///e run a command, w, W and s///w write a file, r and R read
// one.
type sedCommand struct {
	cmd  string // "e", "w", "W", "r", "R", "s///e", "s///w"
	arg  string // the command or the file name
	runs bool   // e, s///e
	// writes: w, W, s///w
	writes bool
}

// sedCommands reads a sed script as GNU sed does (addresses, blocks,
// labels, a/i/c text, s and y with any delimiter and bracket
// expressions) and returns its commands that run programs or touch
// files. A script it cannot read is an error: the policy then refuses
// it, as it cannot say what it does.
func sedCommands(script string) ([]sedCommand, error) {
	p := &sedParser{s: script}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.found, nil
}

type sedParser struct {
	s     string
	i     int
	found []sedCommand
}

func (p *sedParser) eof() bool { return p.i >= len(p.s) }

func (p *sedParser) peek() byte {
	if p.eof() {
		return 0
	}
	return p.s[p.i]
}

func (p *sedParser) errorf(format string, args ...any) error {
	return fmt.Errorf("sed script, at byte %d: %s", p.i, fmt.Sprintf(format, args...))
}

// blanks skips spaces and tabs.
func (p *sedParser) blanks() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// toEOL returns the rest of the line and moves past its newline.
func (p *sedParser) toEOL() string {
	end := strings.IndexByte(p.s[p.i:], '\n')
	if end < 0 {
		out := p.s[p.i:]
		p.i = len(p.s)
		return out
	}
	out := p.s[p.i : p.i+end]
	p.i += end + 1
	return out
}

// label reads a label: up to a semicolon or white space.
func (p *sedParser) label() {
	p.blanks()
	for !p.eof() && !strings.ContainsRune("; \t\n", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *sedParser) parse() error {
	for {
		for !p.eof() && strings.ContainsRune(" \t\n;", rune(p.s[p.i])) {
			p.i++
		}
		if p.eof() {
			return nil
		}
		if p.peek() == '#' {
			p.toEOL()
			continue
		}
		if err := p.addresses(); err != nil {
			return err
		}
		p.blanks()
		for p.peek() == '!' {
			p.i++
			p.blanks()
		}
		if p.eof() {
			return p.errorf("an address with no command")
		}
		c := p.s[p.i]
		p.i++
		switch c {
		case '{', '}':
			continue // a block's commands may follow at once
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
		case '#':
			p.toEOL()
			continue
		case ':', 'b', 't', 'T', 'v':
			// A label ends at a semicolon or white space, and a command
			// may follow it at once.
			p.label()
			continue
		case 'l', 'L', 'q', 'Q':
			p.blanks()
			for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				p.i++
			}
		case 'a', 'i', 'c':
			p.text()
			continue
		case 'r', 'R', 'w', 'W':
			p.blanks()
			name := p.toEOL()
			p.found = append(p.found, sedCommand{cmd: string(c), arg: name, writes: c == 'w' || c == 'W'})
			continue
		case 'e':
			p.blanks()
			p.found = append(p.found, sedCommand{cmd: "e", arg: p.toEOL(), runs: true})
			continue
		case 's':
			if err := p.substitute(); err != nil {
				return err
			}
			if p.eof() || p.s[p.i-1] == '\n' {
				continue // s///w took the rest of the line
			}
		case 'y':
			delim, err := p.delimiter()
			if err != nil {
				return err
			}
			for range 2 {
				if err := p.part(delim, false); err != nil {
					return err
				}
			}
		default:
			return p.errorf("unknown command %q", c)
		}
		// What follows is read as the next command: sed either does the
		// same or refuses the script.
	}
}

// addresses reads zero, one or two addresses.
func (p *sedParser) addresses() error {
	if err := p.address(false); err != nil {
		return err
	}
	p.blanks()
	if p.peek() == ',' {
		p.i++
		p.blanks()
		return p.address(true)
	}
	return nil
}

func (p *sedParser) address(second bool) error {
	digits := func() {
		for !p.eof() && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
	}
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		digits()
		if p.peek() == '~' {
			p.i++
			digits()
		}
	case second && (c == '+' || c == '~'):
		p.i++
		digits()
	case c == '$':
		p.i++
	case c == '/' || c == '\\':
		delim := byte('/')
		if c == '\\' {
			p.i++
			if p.eof() || p.s[p.i] == '\n' || p.s[p.i] == '\\' {
				return p.errorf("a bad address delimiter")
			}
			delim = p.s[p.i]
		}
		p.i++
		if err := p.part(delim, true); err != nil {
			return err
		}
		for !p.eof() && (p.s[p.i] == 'I' || p.s[p.i] == 'M') {
			p.i++
		}
	}
	return nil
}

func (p *sedParser) delimiter() (byte, error) {
	if p.eof() || p.s[p.i] == '\n' || p.s[p.i] == '\\' {
		return 0, p.errorf("a bad delimiter")
	}
	d := p.s[p.i]
	p.i++
	return d, nil
}

// part reads up to an unescaped delim; in a regular expression a bracket
// expression may hold the delimiter.
func (p *sedParser) part(delim byte, regex bool) error {
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\\':
			p.i += 2
			continue
		case c == delim:
			p.i++
			return nil
		case c == '\n' && regex:
			return p.errorf("a newline in a regular expression")
		case c == '[' && regex:
			p.bracket()
			continue
		}
		p.i++
	}
	return p.errorf("an unterminated expression")
}

// bracket skips a bracket expression: [, an optional ^ and ], then up to
// the closing ], passing over [:class:], [=x=] and [.x.].
func (p *sedParser) bracket() {
	start := p.i
	p.i++
	if p.peek() == '^' {
		p.i++
	}
	if p.peek() == ']' {
		p.i++
	}
	for !p.eof() {
		switch c := p.s[p.i]; {
		case c == ']':
			p.i++
			return
		case c == '[' && p.i+1 < len(p.s) && strings.ContainsRune(":=.", rune(p.s[p.i+1])):
			end := strings.Index(p.s[p.i+2:], string(p.s[p.i+1])+"]")
			if end < 0 {
				p.i = start + 1 // not a class after all: a plain [
				return
			}
			p.i += 2 + end + 2
		case c == '\n':
			p.i = start + 1
			return
		default:
			p.i++
		}
	}
	p.i = start + 1 // no closing ]: the [ was a plain character
}

// substitute reads s/re/replacement/flags.
func (p *sedParser) substitute() error {
	delim, err := p.delimiter()
	if err != nil {
		return err
	}
	if err := p.part(delim, true); err != nil {
		return err
	}
	if err := p.part(delim, false); err != nil {
		return err
	}
	for !p.eof() {
		switch c := p.s[p.i]; {
		case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M' || c >= '0' && c <= '9':
			p.i++
		case c == 'e':
			p.i++
			p.found = append(p.found, sedCommand{cmd: "s///e", runs: true})
		case c == 'w':
			p.i++
			p.blanks()
			p.found = append(p.found, sedCommand{cmd: "s///w", arg: p.toEOL(), writes: true})
			return nil
		default:
			return nil
		}
	}
	return nil
}

// text skips a, i or c's text: the rest of the line (after a backslash
// and newline, the next line), and the lines after it while a line ends
// with a backslash.
func (p *sedParser) text() {
	p.blanks()
	if p.peek() == '\\' {
		p.i++
		p.blanks()
		if p.peek() == '\n' {
			p.i++
		}
	}
	for !p.eof() {
		c := p.s[p.i]
		switch {
		case c == '\\':
			p.i += 2
		case c == '\n':
			p.i++
			return
		default:
			p.i++
		}
	}
}

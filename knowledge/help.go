package knowledge

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// passageWords bounds a help passage: a section longer than this is split
// at paragraph ends (or, failing those, between words).
const passageWords = 200

// section is one titled part of a help document.
type section struct {
	title string
	paras []string
}

// HelpFromFile splits a help document into passages of about 200 words,
// one or more per section, as help entries about app. HTML (.html, .htm,
// .xhtml), Markdown (.md, .markdown), XML (.xml, DocBook, Mallard, ...)
// and plain text (anything else: man output, --help output) are read.
func HelpFromFile(app, path string) ([]Entry, error) {
	if app == "" {
		return nil, errors.New("knowledge: a help document needs its app: give app=PATH")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("knowledge: reading help document: %w", err)
	}
	var secs []section
	switch strings.ToLower(filepath.Ext(path)) {
	case ".html", ".htm", ".xhtml":
		secs, err = htmlSections(data)
	case ".md", ".markdown":
		secs = markdownSections(string(data))
	case ".xml", ".page", ".docbook":
		secs, err = xmlSections(data)
	default:
		secs = textSections(string(data))
	}
	if err != nil {
		return nil, fmt.Errorf("knowledge: reading help document %s: %w", path, err)
	}
	return helpEntries(app, path, filepath.Base(path), secs)
}

// HelpFromCommand runs a command that prints help and splits its output
// into passages: "man tar" (run as man -P cat, 80 columns wide, without
// overstrike) or "ls --help", say. The command runs without a shell, for
// at most a minute.
func HelpFromCommand(ctx context.Context, app, cmdline string) ([]Entry, error) {
	if app == "" {
		return nil, errors.New("knowledge: help output needs its app: give app=COMMAND")
	}
	args := strings.Fields(cmdline)
	if len(args) == 0 {
		return nil, errors.New("knowledge: no help command: give one such as \"man tar\" or \"ls --help\"")
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	env := append(os.Environ(), "MANWIDTH=80", "MAN_KEEP_FORMATTING=", "MANPAGER=cat", "PAGER=cat", "LC_ALL=C.UTF-8")
	run := func(args []string) (string, error) {
		c := exec.CommandContext(ctx, args[0], args[1:]...)
		c.Env = env
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Run(); err != nil {
			// Some tools print their help and exit 1 or 2; the output counts.
			var ee *exec.ExitError
			if !errors.As(err, &ee) || out.Len() == 0 {
				return "", fmt.Errorf("knowledge: running %q: %v: %s", cmdline, err, strings.TrimSpace(errOut.String()))
			}
		}
		return out.String(), nil
	}
	var text string
	var err error
	if args[0] == "man" && !contains(args, "-P") {
		// man-db's --nh --nj: no hyphens and no justification, so words
		// stay whole and single-spaced; other mans are asked plainly.
		if text, err = run(append([]string{"man", "--nh", "--nj", "-P", "cat"}, args[1:]...)); err != nil {
			text, err = run(append([]string{"man", "-P", "cat"}, args[1:]...))
		}
	} else {
		text, err = run(args)
	}
	if err != nil {
		return nil, err
	}
	text = overstrike.ReplaceAllString(text, "")
	text = ansi.ReplaceAllString(text, "")
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("knowledge: %q printed no help", cmdline)
	}
	name := strings.Join(strings.Fields(cmdline), " ")
	return helpEntries(app, name, name, textSections(text))
}

var (
	overstrike = regexp.MustCompile(".\x08")
	ansi       = regexp.MustCompile("\x1b\\[[0-9;]*m")
)

// helpEntries cuts sections into passages and makes entries of them.
func helpEntries(app, path, name string, secs []section) ([]Entry, error) {
	var out []Entry
	for _, s := range secs {
		for i, p := range passages(s.paras) {
			title := name
			if s.title != "" {
				title += ": " + s.title
			}
			if i > 0 {
				title += fmt.Sprintf(" (part %d)", i+1)
			}
			out = append(out, Entry{
				ID: idOf(Help, app, path, s.title, fmt.Sprint(len(out))), Kind: Help, App: app,
				Title: title, Text: p, Source: Source{Path: path, Section: s.title},
			})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("knowledge: %s has no text to index", path)
	}
	return out, nil
}

// passages joins paragraphs into passages of at most passageWords words.
func passages(paras []string) []string {
	var out []string
	var cur []string
	words := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n\n"))
			cur, words = nil, 0
		}
	}
	for _, p := range paras {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		n := len(strings.Fields(p))
		if words > 0 && words+n > passageWords {
			flush()
		}
		if n > passageWords { // one long paragraph: between words
			f := strings.Fields(p)
			for len(f) > passageWords {
				out = append(out, strings.Join(f[:passageWords], " "))
				f = f[passageWords:]
			}
			p, n = strings.Join(f, " "), len(f)
		}
		cur = append(cur, p)
		words += n
	}
	flush()
	return out
}

// textSections splits man and --help output: a line at the left margin
// that is short and has no sentence end ("DESCRIPTION", "Options:",
// "  -l, --long" is not one) starts a section.
func textSections(text string) []section {
	var secs []section
	cur := section{}
	var para []string
	endPara := func() {
		if len(para) > 0 {
			cur.paras = append(cur.paras, strings.Join(para, "\n"))
			para = nil
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		trimmed := strings.TrimRight(line, " \t")
		switch {
		case strings.TrimSpace(trimmed) == "":
			endPara()
		case isHeading(trimmed):
			endPara()
			if len(cur.paras) > 0 || cur.title != "" {
				secs = append(secs, cur)
			}
			cur = section{title: strings.TrimSuffix(strings.TrimSpace(trimmed), ":")}
		default:
			para = append(para, trimmed)
		}
	}
	endPara()
	if len(cur.paras) > 0 {
		secs = append(secs, cur)
	}
	return secs
}

func isHeading(line string) bool {
	if line[0] == ' ' || line[0] == '\t' || len(line) > 60 {
		return false
	}
	if strings.HasSuffix(line, ":") && len(strings.Fields(line)) <= 6 {
		return true
	}
	// A man page's section names are in capitals: NAME, SEE ALSO.
	return strings.ToUpper(line) == line && strings.IndexFunc(line, func(r rune) bool { return r >= 'A' && r <= 'Z' }) >= 0 && len(strings.Fields(line)) <= 5
}

// markdownSections splits at ATX headings (#, ##, ...), outside fences.
func markdownSections(text string) []section {
	var secs []section
	cur := section{}
	var para []string
	fenced := false
	endPara := func() {
		if len(para) > 0 {
			cur.paras = append(cur.paras, strings.Join(para, "\n"))
			para = nil
		}
	}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			para = append(para, line)
			continue
		}
		switch {
		case fenced:
			para = append(para, line)
		case strings.HasPrefix(t, "#"):
			h := strings.TrimSpace(strings.TrimLeft(t, "#"))
			if h == "" || !strings.HasPrefix(strings.TrimLeft(t, "#"), " ") {
				para = append(para, line)
				continue
			}
			endPara()
			if len(cur.paras) > 0 {
				secs = append(secs, cur)
			}
			cur = section{title: h}
		case t == "":
			endPara()
		default:
			para = append(para, line)
		}
	}
	endPara()
	if len(cur.paras) > 0 {
		secs = append(secs, cur)
	}
	return secs
}

// htmlSections splits at h1-h6, taking the text of block elements as
// paragraphs and leaving out scripts, styles and navigation.
func htmlSections(data []byte) ([]section, error) {
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var secs []section
	cur := section{}
	var para strings.Builder
	endPara := func() {
		if s := strings.Join(strings.Fields(para.String()), " "); s != "" {
			cur.paras = append(cur.paras, s)
		}
		para.Reset()
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "style", "nav", "noscript", "template", "head":
				return
			case "h1", "h2", "h3", "h4", "h5", "h6", "title":
				endPara()
				if len(cur.paras) > 0 {
					secs = append(secs, cur)
				}
				cur = section{title: strings.Join(strings.Fields(textOf(n)), " ")}
				return
			case "p", "div", "li", "pre", "tr", "dt", "dd", "br", "table", "ul", "ol", "section", "article", "blockquote":
				endPara()
				defer endPara()
			}
		}
		if n.Type == html.TextNode {
			para.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	endPara()
	if len(cur.paras) > 0 {
		secs = append(secs, cur)
	}
	return secs, nil
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// xmlSections reads XML help (DocBook, Mallard, a vendor's own): an
// element named title, h1-h6 or heading starts a section; the text of
// para, p, item and the like are paragraphs.
func xmlSections(data []byte) ([]section, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	var secs []section
	cur := section{}
	var text strings.Builder
	inTitle := 0
	endPara := func() {
		if s := strings.Join(strings.Fields(text.String()), " "); s != "" {
			if inTitle > 0 {
				if len(cur.paras) > 0 {
					secs = append(secs, cur)
				}
				cur = section{title: s}
			} else {
				cur.paras = append(cur.paras, s)
			}
		}
		text.Reset()
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch strings.ToLower(t.Name.Local) {
			case "title", "h1", "h2", "h3", "h4", "h5", "h6", "heading", "refname":
				endPara()
				inTitle++
			case "para", "p", "item", "listitem", "entry", "screen", "programlisting", "li", "dd", "dt", "section", "sect1", "sect2", "page", "topic":
				endPara()
			}
		case xml.EndElement:
			switch strings.ToLower(t.Name.Local) {
			case "title", "h1", "h2", "h3", "h4", "h5", "h6", "heading", "refname":
				endPara()
				inTitle--
			case "para", "p", "item", "listitem", "entry", "screen", "programlisting", "li", "dd", "dt":
				endPara()
			}
		case xml.CharData:
			text.Write(t)
			text.WriteString(" ")
		}
	}
	endPara()
	if len(cur.paras) > 0 {
		secs = append(secs, cur)
	}
	return secs, nil
}

package knowledge

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/hosttest"
)

func sectionsOf(es []Entry) []string {
	var out []string
	for _, e := range es {
		if !slices.Contains(out, e.Source.Section) {
			out = append(out, e.Source.Section)
		}
	}
	return out
}

func checkPassages(t *testing.T, es []Entry, app string) {
	t.Helper()
	ids := map[string]bool{}
	for _, e := range es {
		if n := len(strings.Fields(e.Text)); n > passageWords || n == 0 {
			t.Errorf("%s: %d words", e.Title, n)
		}
		if e.Kind != Help || e.App != app || e.Outcome != "" || ids[e.ID] {
			t.Errorf("%s: kind %s app %s outcome %q (id seen: %v)", e.Title, e.Kind, e.App, e.Outcome, ids[e.ID])
		}
		ids[e.ID] = true
	}
}

// tar's man page, as man prints it, is split by its sections.
func TestHelpFromAManPage(t *testing.T) {
	hosttest.Program(t, "man")
	if exec.Command("man", "-w", "tar").Run() != nil {
		hosttest.Missing(t, "tar's man page is not installed (apt-get install tar man-db)")
	}
	es, err := HelpFromCommand(testCtx(t), "tar", "man tar")
	if err != nil {
		t.Fatal(err)
	}
	secs := sectionsOf(es)
	for _, want := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS"} {
		if !slices.Contains(secs, want) {
			t.Errorf("sections %q lack %s", secs, want)
		}
	}
	checkPassages(t, es, "tar")
	if len(es) < 10 || es[0].Source.Path != "man tar" {
		t.Errorf("%d passages from %q", len(es), es[0].Source.Path)
	}
	for _, e := range es {
		if strings.ContainsRune(e.Text, '\b') || strings.Contains(e.Text, "\u2010\n") {
			t.Fatalf("overstrike or a hyphenated word left in %s:\n%s", e.Title, e.Text)
		}
	}
	s, err := Open(testCtx(t), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add(testCtx(t), es...); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(testCtx(t), Query{Text: "extract files from a gzip compressed archive", App: "tar", Limit: 3})
	if err != nil || len(hits) == 0 || !strings.Contains(strings.Join([]string{hits[0].Entry.Text, hits[1].Entry.Text, hits[2].Entry.Text}, " "), "--extract") {
		t.Errorf("search in tar's manual: %v %v", ids(hits), err)
	}
}

// ls --help is split at its headings ("Exit status:").
func TestHelpFromHelpOutput(t *testing.T) {
	hosttest.Program(t, "ls")
	es, err := HelpFromCommand(testCtx(t), "ls", "ls --help")
	if err != nil {
		t.Fatal(err)
	}
	checkPassages(t, es, "ls")
	all := ""
	for _, e := range es {
		all += e.Text + "\n"
	}
	if !strings.Contains(all, "--all") || !strings.Contains(all, "Usage: ls") || len(es) < 2 {
		t.Errorf("%d passages:\n%s", len(es), all)
	}
	if _, err := HelpFromCommand(testCtx(t), "x", "no-such-command-k36 --help"); err == nil || !strings.Contains(err.Error(), "no-such-command-k36") {
		t.Errorf("a missing command: %v", err)
	}
	if _, err := HelpFromCommand(testCtx(t), "", "ls --help"); err == nil || !strings.Contains(err.Error(), "app=") {
		t.Errorf("no app: %v", err)
	}
}

const helpMarkdown = `# Scanner Pro

Scanner Pro turns paper into PDF files.

## Scanning a page

Put the page face down on the glass and press **Scan**. The preview shows
the page; press Save to keep it.

` + "```" + `
# not a heading: a comment in a code block
scanpro --resolution 300
` + "```" + `

## Saving as PDF

Choose File > Export as PDF. Several pages make one PDF when they are
selected together.
`

const helpHTML = `<!doctype html><html><head><title>ignored</title><style>body{}</style></head><body>
<nav>Home | Help</nav>
<h1>Mail Client Help</h1><p>The mail client reads and sends mail.</p>
<h2>Adding an account</h2><p>Open <b>Settings</b>, then <i>Accounts</i>, and press Add.</p><ul><li>IMAP servers</li><li>POP3 servers</li></ul>
<h2>Filters</h2><p>A filter moves mail into a folder by sender or subject.</p><script>var x = "not help";</script>
</body></html>`

const helpXML = `<?xml version="1.0"?>
<page xmlns="http://projectmallard.org/1.0/" id="print">
  <title>Printing a document</title>
  <p>Press <keyseq><key>Ctrl</key><key>P</key></keyseq> to print.</p>
  <section id="duplex"><title>Printing on both sides</title>
    <p>Choose Two-sided in the Page Setup tab.</p>
  </section>
</page>`

// Markdown, HTML and XML help files are split by their headings.
func TestHelpFromFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	cases := []struct {
		app, file, text string
		sections        []string
		has, lacks      []string
	}{
		{"scanpro", "guide.md", helpMarkdown, []string{"Scanner Pro", "Scanning a page", "Saving as PDF"},
			[]string{"press **Scan**", "# not a heading", "Export as PDF"}, nil},
		{"mail", "help.html", helpHTML, []string{"Mail Client Help", "Adding an account", "Filters"},
			[]string{"Open Settings, then Accounts, and press Add.", "IMAP servers", "by sender or subject"}, []string{"not help", "Home | Help", "body{}", "ignored"}},
		{"printer", "print.page.xml", helpXML, []string{"Printing a document", "Printing on both sides"},
			[]string{"Ctrl P to print", "Two-sided"}, nil},
	}
	for _, c := range cases {
		es, err := HelpFromFile(c.app, write(c.file, c.text))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		checkPassages(t, es, c.app)
		if got := sectionsOf(es); !slices.Equal(got, c.sections) {
			t.Errorf("%s: sections %q, want %q", c.file, got, c.sections)
		}
		all := ""
		for _, e := range es {
			all += e.Text + "\n"
			if !strings.HasPrefix(e.Title, c.file+": ") || e.Source.Path != filepath.Join(dir, c.file) {
				t.Errorf("%s: title %q, source %+v", c.file, e.Title, e.Source)
			}
		}
		for _, s := range c.has {
			if !strings.Contains(all, s) {
				t.Errorf("%s: no %q in\n%s", c.file, s, all)
			}
		}
		for _, s := range c.lacks {
			if strings.Contains(all, s) {
				t.Errorf("%s: %q kept in\n%s", c.file, s, all)
			}
		}
	}
	if _, err := HelpFromFile("x", filepath.Join(dir, "missing.md")); err == nil || !strings.Contains(err.Error(), "missing.md") {
		t.Errorf("a missing file: %v", err)
	}
}

// A long section becomes several passages of at most 200 words, split at
// paragraph ends.
func TestLongSectionsSplitIntoPassages(t *testing.T) {
	para := strings.TrimSpace(strings.Repeat("word ", 90))
	var b strings.Builder
	b.WriteString("# Long\n\n")
	for range 5 {
		b.WriteString(para + "\n\n")
	}
	b.WriteString(strings.Repeat("huge ", 450))
	p := filepath.Join(t.TempDir(), "long.md")
	os.WriteFile(p, []byte(b.String()), 0o644)
	es, err := HelpFromFile("app", p)
	if err != nil {
		t.Fatal(err)
	}
	var words []int
	for _, e := range es {
		words = append(words, len(strings.Fields(e.Text)))
	}
	if want := []int{180, 180, 90, 200, 200, 50}; !slices.Equal(words, want) {
		t.Errorf("passages of %v words, want %v", words, want)
	}
	if es[1].Title != "long.md: Long (part 2)" {
		t.Errorf("title %q", es[1].Title)
	}
}

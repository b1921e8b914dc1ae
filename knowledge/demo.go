package knowledge

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/textproto"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/html"

	"github.com/saucerhq/saucer/trajectory"
)

// A Steps Recorder (psr.exe) recording, as Windows saves it: a .zip that
// holds one .mht file, a MIME multipart/related message. Its main.htm part
// is the report a person reads; inside it, an XML island
// (<script id="myXML" type="text/xml">) holds the steps as the recorder
// saw them:
//
//	<Report><UserActionData><RecordSession ActionCount="5" MissedActionCount="0">
//	  <EachAction ActionNumber="1" FileName="NOTEPAD.EXE" FileDescription="Notepad" ...>
//	    <Description>User left click on "File (menu item)" in "Untitled - Notepad"</Description>
//	    <Action>Mouse Left Click</Action>
//	    <UIAStack><Level Name="Untitled - Notepad" LocalizedControlType="window" .../></UIAStack>
//	    <ScreenshotFileName>screenshot0001.JPEG</ScreenshotFileName>
//	  </EachAction>
//
// The comments a person adds in the recorder's review are only in the
// HTML: <div id="Step2"> ... <p><b>Comment: </b>I typed notes.txt</p>.
// The other parts are the stylesheet, the slide show pages and the
// screenshots (image/jpeg, base64), which a demonstration does not keep.
// The recorder does not record what was typed, only function and
// shortcut keys ("[... Backspace ...]"); a person says what they typed in
// a comment.

// Limits of what a demonstration keeps of a Steps Recorder file.
const (
	maxPSRBytes   = 512 << 20 // the .mht, screenshots and all
	maxDemoSteps  = 60        // steps listed in one entry
	maxDemoLine   = 600       // one step's description or comment
	psrMainPart   = "main.htm"
	psrWhatToGive = "give the .zip that Steps Recorder saved (or the .mht file inside it)"
)

// psrStep is one step a person took, as Steps Recorder wrote it.
type psrStep struct {
	n           int
	action      string // "Mouse Left Click", "Keyboard Input"
	description string // `User left click on "Save (button)" in "Untitled - Notepad"`
	program     string // the program's file name, lower case, without .exe: "notepad"
	window      string // the top-level window the step was in
	comment     string // what the person wrote for the step in the review
}

// psrRecord is what a Steps Recorder file holds that a demonstration
// keeps.
type psrRecord struct {
	steps  []psrStep
	missed int // steps the recorder says it missed
}

// DemonstrationFromPSR reads a Windows Steps Recorder recording (the .zip
// it saves, or the .mht file inside it), as UFO's record processor does,
// and makes one Demonstration entry of it: titled with request (what the
// person did, which the recording does not say), about the program most
// steps ran in, its text the numbered steps with the person's comments,
// its source the file and the step range. Screenshots are not kept.
// Everything kept passes red (nil: the built-in patterns only).
func DemonstrationFromPSR(file string, request string, red *trajectory.Redactor) (Entry, error) {
	if strings.TrimSpace(request) == "" {
		return Entry{}, fmt.Errorf("knowledge: %s: a demonstration needs the request the person carried out in it (\"save a note as notes.txt in Notepad\"): give it", file)
	}
	if red == nil {
		var err error
		if red, err = trajectory.NewRedactor(nil, trajectory.DefaultPatterns()); err != nil {
			return Entry{}, err
		}
	}
	mht, err := readPSRFile(file)
	if err != nil {
		return Entry{}, err
	}
	rec, err := parsePSR(file, mht)
	if err != nil {
		return Entry{}, err
	}
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	x := &extract{red: red}

	// The app is the program most steps ran in; a tie goes to the one
	// seen first.
	count := map[string]int{}
	var apps []string
	app := ""
	for _, st := range rec.steps {
		if st.program == "" {
			continue
		}
		if count[st.program]++; count[st.program] == 1 {
			apps = append(apps, st.program)
		}
		if app == "" || count[st.program] > count[app] {
			app = st.program
		}
	}
	slices.Sort(apps)

	first, last := rec.steps[0].n, rec.steps[len(rec.steps)-1].n
	var b strings.Builder
	fmt.Fprintf(&b, "Request: %s\n", x.cut(request, maxAnswer))
	fmt.Fprintf(&b, "Shown by a person with Windows Steps Recorder: %d step%s", len(rec.steps), plural(len(rec.steps)))
	if len(apps) > 0 {
		fmt.Fprintf(&b, " in %s", strings.Join(apps, ", "))
	}
	if rec.missed > 0 {
		fmt.Fprintf(&b, " (the recorder missed %d more)", rec.missed)
	}
	b.WriteString(". What was typed is not recorded, except in the person's comments.\n")
	b.WriteString("Steps:\n")
	for i, st := range rec.steps {
		if i == maxDemoSteps {
			fmt.Fprintf(&b, "- (%d more steps, to step %d)\n", len(rec.steps)-maxDemoSteps, last)
			break
		}
		fmt.Fprintf(&b, "%d. ", st.n)
		if len(apps) > 1 && st.program != "" {
			b.WriteString(x.s(st.program) + ": ")
		}
		b.WriteString(x.cut(plainStep(st), maxDemoLine))
		b.WriteString("\n")
		if st.comment != "" {
			fmt.Fprintf(&b, "   Comment: %s\n", x.cut(st.comment, maxDemoLine))
		}
	}

	sum := sha256.Sum256(mht)
	section := fmt.Sprintf("steps %d-%d", first, last)
	if first == last {
		section = fmt.Sprintf("step %d", first)
	}
	e := Entry{
		// The recording, not where it lies: learning it again (with a
		// better request, say) replaces it.
		ID:   idOf(Demonstration, "psr", hex.EncodeToString(sum[:])),
		Kind: Demonstration, App: x.s(app), Apps: apps,
		Title:  red.String(oneLine(request)),
		Text:   red.String(b.String()),
		Source: Source{Path: red.String(file), Section: section},
	}
	for i := range e.Apps {
		e.Apps[i] = red.String(e.Apps[i])
	}
	return e, nil
}

// plainStep is a step in plain words: `Left click on "Save (button)" in
// "Untitled - Notepad"`, the window added when the recorder left it out.
func plainStep(st psrStep) string {
	d := oneLine(strings.ReplaceAll(st.description, "\u200e", ""))
	if rest, ok := strings.CutPrefix(d, "User "); ok && rest != "" {
		d = strings.ToUpper(rest[:1]) + rest[1:]
	}
	if d == "" {
		d = st.action
	}
	if st.window != "" && !strings.Contains(d, `"`+st.window+`"`) {
		d += ` in "` + st.window + `"`
	}
	return d
}

// readPSRFile reads the .mht of a Steps Recorder file: the one inside a
// .zip, or the file itself.
func readPSRFile(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %w: %s", err, psrWhatToGive)
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	if bytes.Equal(head[:n], []byte("PK\x03\x04")) || bytes.Equal(head[:n], []byte("PK\x05\x06")) {
		return readPSRZip(file)
	}
	if strings.EqualFold(filepath.Ext(file), ".zip") {
		return nil, fmt.Errorf("knowledge: %s is not a zip archive: %s", file, psrWhatToGive)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("knowledge: %s: %w", file, err)
	}
	return readAllLimited(f, file)
}

func readPSRZip(file string) ([]byte, error) {
	z, err := zip.OpenReader(file)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %s is not a readable zip archive (%v): %s", file, err, psrWhatToGive)
	}
	defer z.Close()
	var mhts []*zip.File
	var names []string
	for _, zf := range z.File {
		if zf.FileInfo().IsDir() {
			continue
		}
		names = append(names, zf.Name)
		switch strings.ToLower(path.Ext(zf.Name)) {
		case ".mht", ".mhtml":
			mhts = append(mhts, zf)
		}
	}
	switch {
	case len(mhts) == 0:
		held := "nothing"
		if len(names) > 0 {
			held = strings.Join(names, ", ")
			if len(names) > 5 {
				held = strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
			}
		}
		return nil, fmt.Errorf("knowledge: %s holds no .mht file (it holds %s): it is not a Steps Recorder recording; %s", file, held, psrWhatToGive)
	case len(mhts) > 1:
		var ns []string
		for _, m := range mhts {
			ns = append(ns, m.Name)
		}
		return nil, fmt.Errorf("knowledge: %s holds %d .mht files (%s): unzip it and give the one of the demonstration", file, len(mhts), strings.Join(ns, ", "))
	}
	r, err := mhts[0].Open()
	if err != nil {
		return nil, fmt.Errorf("knowledge: %s: %s: %w", file, mhts[0].Name, err)
	}
	defer r.Close()
	return readAllLimited(r, file+": "+mhts[0].Name)
}

func readAllLimited(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxPSRBytes+1))
	if err != nil {
		return nil, fmt.Errorf("knowledge: %s: %w", name, err)
	}
	if len(data) > maxPSRBytes {
		return nil, fmt.Errorf("knowledge: %s is larger than %d MiB: it is not a Steps Recorder recording, or record fewer steps", name, maxPSRBytes>>20)
	}
	return data, nil
}

// parsePSR reads the steps from a Steps Recorder .mht: from the XML the
// recorder kept in main.htm, else from the HTML's step paragraphs; and
// the person's comments from the HTML.
func parsePSR(file string, mht []byte) (psrRecord, error) {
	page, err := psrMainPage(file, mht)
	if err != nil {
		return psrRecord{}, err
	}
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return psrRecord{}, fmt.Errorf("knowledge: %s: its %s cannot be read as HTML: %w", file, psrMainPart, err)
	}
	htmlSteps := psrHTMLSteps(doc)
	rec, err := psrXMLSteps(page)
	if err != nil {
		return psrRecord{}, fmt.Errorf("knowledge: %s: the steps Steps Recorder kept in %s cannot be read (%v): save the recording from Steps Recorder again", file, psrMainPart, err)
	}
	if len(rec.steps) == 0 {
		// No XML (a report saved by something else): the HTML's steps,
		// without their programs.
		for _, h := range htmlSteps {
			rec.steps = append(rec.steps, psrStep{n: h.n, description: h.description})
		}
	}
	if len(rec.steps) == 0 {
		return psrRecord{}, fmt.Errorf("knowledge: %s has no recorded steps (no <EachAction> in its %s, nor any \"Step N:\" paragraph): record the task again with Steps Recorder, do at least one step, and save it", file, psrMainPart)
	}
	byN := map[int]string{}
	for _, h := range htmlSteps {
		byN[h.n] = h.comment
	}
	for i := range rec.steps {
		rec.steps[i].comment = byN[rec.steps[i].n]
	}
	slices.SortStableFunc(rec.steps, func(a, b psrStep) int { return a.n - b.n })
	return rec, nil
}

// psrMainPage is the MHT's main.htm part (its first HTML part when none
// is named so), decoded.
func psrMainPage(file string, mht []byte) ([]byte, error) {
	notMHT := func(why string) error {
		return fmt.Errorf("knowledge: %s is not a Steps Recorder .mht file (%s): %s", file, why, psrWhatToGive)
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(bytes.TrimPrefix(mht, []byte("\xef\xbb\xbf")))))
	hdr, err := tp.ReadMIMEHeader()
	if err != nil && len(hdr) == 0 {
		return nil, notMHT("it does not start with MIME headers, so it is not an MHTML archive")
	}
	mt, params, err := mime.ParseMediaType(hdr.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, notMHT("it is not a MIME multipart message, so not an MHTML archive")
	}
	mr := multipart.NewReader(tp.R, params["boundary"])
	var first []byte
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if first != nil {
				break
			}
			return nil, notMHT(fmt.Sprintf("its MIME parts cannot be read: %v", err))
		}
		loc := p.Header.Get("Content-Location")
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		if ct != "text/html" && !strings.EqualFold(path.Base(loc), psrMainPart) {
			continue
		}
		body, err := decodePart(p)
		if err != nil {
			return nil, fmt.Errorf("knowledge: %s: part %s: %w", file, loc, err)
		}
		if strings.EqualFold(path.Base(loc), psrMainPart) {
			return body, nil
		}
		if first == nil {
			first = body
		}
	}
	if first == nil {
		return nil, notMHT("it has no " + psrMainPart + " or other HTML part")
	}
	return first, nil
}

// decodePart reads a MIME part, undoing its transfer encoding.
func decodePart(p *multipart.Part) ([]byte, error) {
	var r io.Reader = p
	switch strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))) {
	case "quoted-printable":
		r = quotedprintable.NewReader(p)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, p) // it skips line breaks
	}
	return io.ReadAll(io.LimitReader(r, maxPSRBytes))
}

// psrXML is the recorder's XML: only what a demonstration keeps.
type psrXML struct {
	Sessions []struct {
		Missed  int `xml:"MissedActionCount,attr"`
		Actions []struct {
			Number      string `xml:"ActionNumber,attr"`
			FileName    string `xml:"FileName,attr"`
			Description string `xml:"Description"`
			Action      string `xml:"Action"`
			Levels      []struct {
				Name string `xml:"Name,attr"`
				Type string `xml:"LocalizedControlType,attr"`
			} `xml:"UIAStack>Level"`
		} `xml:"EachAction"`
	} `xml:"UserActionData>RecordSession"`
}

// psrXMLSteps reads the steps from the XML island in main.htm; none when
// there is no island.
func psrXMLSteps(page []byte) (psrRecord, error) {
	start := bytes.Index(page, []byte("<Report"))
	end := bytes.LastIndex(page, []byte("</Report>"))
	if start < 0 || end < start {
		return psrRecord{}, nil
	}
	var x psrXML
	d := xml.NewDecoder(bytes.NewReader(page[start : end+len("</Report>")]))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	if err := d.Decode(&x); err != nil {
		return psrRecord{}, err
	}
	var rec psrRecord
	for _, s := range x.Sessions {
		rec.missed += s.Missed
		for _, a := range s.Actions {
			n, err := strconv.Atoi(strings.TrimSpace(a.Number))
			if err != nil {
				return psrRecord{}, fmt.Errorf("a step's ActionNumber %q is not a number", a.Number)
			}
			st := psrStep{n: n, action: strings.TrimSpace(a.Action), description: strings.TrimSpace(a.Description), program: programName(a.FileName)}
			// The step's window is its UI stack's outermost window.
			for _, l := range a.Levels {
				if strings.EqualFold(l.Type, "window") && strings.TrimSpace(l.Name) != "" {
					st.window = strings.TrimSpace(l.Name)
				}
			}
			rec.steps = append(rec.steps, st)
		}
	}
	return rec, nil
}

// programName is a program's file name as an app's name: "NOTEPAD.EXE"
// is "notepad".
func programName(file string) string {
	file = strings.TrimSpace(file)
	if i := strings.LastIndexAny(file, `\/`); i >= 0 {
		file = file[i+1:]
	}
	file = strings.ToLower(file)
	return strings.TrimSuffix(file, ".exe")
}

// htmlStep is a step as the report's HTML shows it.
type htmlStep struct {
	n                    int
	description, comment string
}

var (
	stepID   = regexp.MustCompile(`^Step(\d+)$`)
	stepHead = regexp.MustCompile(`^Step \d+:`)
)

// psrHTMLSteps reads the report's steps: each <div id="StepN">, its
// "Step N: (time)" paragraph and its comment.
func psrHTMLSteps(doc *html.Node) []htmlStep {
	var out []htmlStep
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "div" {
			if m := stepID.FindStringSubmatch(attr(n, "id")); m != nil {
				num, _ := strconv.Atoi(m[1])
				st := htmlStep{n: num}
				readHTMLStep(n, &st)
				out = append(out, st)
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out
}

// readHTMLStep finds a step div's bold labels: "Step N: (time)" before
// the description, "Comment:" before the comment; each runs to the end of
// its paragraph.
func readHTMLStep(div *html.Node, st *htmlStep) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "b" {
			label := strings.TrimSpace(strings.ReplaceAll(nodeText(n), "\u200e", ""))
			var rest strings.Builder
			for s := n.NextSibling; s != nil; s = s.NextSibling {
				rest.WriteString(nodeText(s))
			}
			switch {
			case strings.EqualFold(strings.TrimSuffix(label, ":"), "Comment"):
				st.comment = oneLine(rest.String())
			case stepHead.MatchString(label):
				st.description = oneLine(rest.String())
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(div)
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func nodeText(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(nodeText(c))
	}
	return b.String()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

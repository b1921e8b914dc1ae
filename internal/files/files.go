// Package files is Saucer's MCP server for reading, writing, listing and
// searching files, confined to a set of allowed directories (roots).
//
// Relative paths are taken from the first root; absolute paths must lie
// inside one of the roots. Every access goes through os.Root, so neither
// ".." nor a symlink can reach outside the roots.
package files

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/saucerhq/saucer/tools"
)

// Defaults and limits.
const (
	DefaultMaxRead    = 1 << 20
	DefaultMaxEntries = 1000
	MaxEntriesLimit   = 10000
	DefaultMaxResults = 100
	MaxResultsLimit   = 1000
	// Files larger than this are not searched for content.
	maxSearchFileSize = 8 << 20
	// A matching line is cut to this many bytes in search results.
	maxLineText = 300
)

// Options configures the files server. The zero value allows the working
// directory.
type Options struct {
	// Roots are the directories the tools may touch. Default: the working
	// directory. Relative paths given to the tools are taken from Roots[0].
	Roots []string
	// MaxRead is the most bytes read_file returns in one call. Default: 1 MiB.
	MaxRead int
	// Jail, when set, holds the files (a sandbox): Roots are paths
	// inside it, and absolute symlinks resolve against its root, not the
	// host's.
	Jail Jail
}

// Jail is somewhere other than the host's file system, such as a
// *sandbox.Sandbox.
type Jail interface {
	// Path is the host's view of a path inside.
	Path(inside string) string
}

// New builds the files MCP server (name "files"). It fails if a root does
// not exist or is not a directory.
func New(opts Options) (*tools.Server, error) {
	r, err := newRoots(opts.Roots, opts.Jail)
	if err != nil {
		return nil, err
	}
	if opts.MaxRead <= 0 {
		opts.MaxRead = DefaultMaxRead
	}
	f := &fileTools{roots: r, maxRead: opts.MaxRead}
	where := fmt.Sprintf("Allowed directories: %s. Relative paths are taken from %s.", strings.Join(r.dirs, ", "), r.dirs[0])
	s := &tools.Server{Name: "files", Instructions: "Reads, writes, lists and searches files. " + where}

	readOnly := tools.Annotations{Risk: tools.RiskRead, Idempotent: true}
	read, list, search := readOnly, readOnly, readOnly
	read.Title, list.Title, search.Title = "Read a file", "List a directory", "Search files"
	s.Add(tools.New("read_file",
		fmt.Sprintf("Read a file. Returns at most %d bytes from offset; truncated says whether more follows. "+
			"Text is returned as is, other content as base64 (encoding tells which). %s", f.maxRead, where),
		read, f.readFile))
	s.Add(tools.New("write_file",
		"Write text to a file, replacing it (or appending to it with append: true). "+
			"Missing parent directories are created only with create_dirs: true. "+where,
		tools.Annotations{Title: "Write a file", Risk: tools.RiskWrite},
		f.writeFile))
	s.Add(tools.New("list_dir",
		fmt.Sprintf("List a directory, sorted by name; recursive lists the whole tree (symlinked directories are not followed). "+
			"At most max_entries entries (default %d). %s", DefaultMaxEntries, where),
		list, f.listDir))
	s.Add(tools.New("search_files",
		fmt.Sprintf("Find files under a directory whose name matches a glob pattern (\"*.go\"; a pattern with a slash is matched "+
			"against the path relative to that directory), optionally only those containing a substring, reported line by line. "+
			".git directories are skipped. At most max_results matches (default %d). %s", DefaultMaxResults, where),
		search, f.searchFiles))
	return s, nil
}

type fileTools struct {
	roots   *roots
	maxRead int
}

// ReadInput is the input of read_file.
type ReadInput struct {
	Path   string `json:"path" jsonschema_description:"File to read."`
	Offset int64  `json:"offset,omitempty" jsonschema_description:"Byte offset to start at (default 0)."`
	Limit  int    `json:"limit,omitempty" jsonschema_description:"Most bytes to return (default and maximum: the server's read limit)."`
}

// ReadOutput is the result of read_file.
type ReadOutput struct {
	Path      string `json:"path"`
	Content   string `json:"content"`
	Size      int64  `json:"size" jsonschema_description:"Size of the whole file in bytes."`
	Truncated bool   `json:"truncated" jsonschema_description:"True if the file goes on after the returned content."`
	Encoding  string `json:"encoding,omitempty" jsonschema_description:"base64 when the content is not text; absent for text."`
}

func (f *fileTools) readFile(ctx context.Context, in ReadInput) (ReadOutput, error) {
	if in.Offset < 0 || in.Limit < 0 {
		return ReadOutput{}, errors.New("offset and limit must not be negative")
	}
	limit := f.maxRead
	if in.Limit > 0 && in.Limit < limit {
		limit = in.Limit
	}
	var out ReadOutput
	t, err := f.roots.do(in.Path, func(root *os.Root, t target) error {
		// O_NONBLOCK: opening a FIFO must not wait for a writer (it would
		// wedge the server); what is opened is checked before it is read.
		file, err := root.OpenFile(t.rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return err
		}
		defer file.Close()
		st, err := file.Stat()
		if err != nil {
			return err
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory; use list_dir", t.abs())
		}
		if !st.Mode().IsRegular() {
			return notRegular(t, st.Mode())
		}
		data, err := io.ReadAll(io.LimitReader(io.NewSectionReader(file, in.Offset, max(st.Size()-in.Offset, 0)), int64(limit)))
		if err != nil {
			return err
		}
		out.Size = st.Size()
		out.Content, out.Encoding, data = encodeContent(data, in.Offset+int64(len(data)) < st.Size())
		out.Truncated = in.Offset+int64(len(data)) < st.Size()
		return nil
	})
	if err != nil {
		return ReadOutput{}, describe(t, err)
	}
	out.Path = t.abs()
	return out, nil
}

// notRegular refuses a file that is not a regular one (a FIFO, a device,
// a socket): reading or writing it could block or act on the device.
func notRegular(t target, mode fs.FileMode) error {
	if mode.IsDir() {
		return fmt.Errorf("%s is a directory", t.abs())
	}
	kind := mode.Type().String()
	switch {
	case mode&fs.ModeNamedPipe != 0:
		kind = "a FIFO"
	case mode&fs.ModeSocket != 0:
		kind = "a socket"
	case mode&fs.ModeDevice != 0:
		kind = "a device"
	}
	return fmt.Errorf("%s is not a regular file (%s): only regular files are read or written", t.abs(), kind)
}

// encodeContent returns data as text when it is text, else as base64. When
// more of the file follows, a character cut in half at the end is left for
// the next read; the bytes actually returned come back as the third value.
func encodeContent(data []byte, more bool) (string, string, []byte) {
	text := data
	if more {
		for i := 0; i < utf8.UTFMax-1 && len(text) > 0 && !utf8.Valid(text); i++ {
			text = text[:len(text)-1]
		}
	}
	if utf8.Valid(text) && !bytes.ContainsRune(text, 0) {
		return string(text), "", text
	}
	return base64.StdEncoding.EncodeToString(data), "base64", data
}

// WriteInput is the input of write_file.
type WriteInput struct {
	Path       string `json:"path" jsonschema_description:"File to write."`
	Content    string `json:"content" jsonschema_description:"Text to write."`
	Append     bool   `json:"append,omitempty" jsonschema_description:"Append to the file instead of replacing it."`
	CreateDirs bool   `json:"create_dirs,omitempty" jsonschema_description:"Create missing parent directories."`
}

// WriteOutput is the result of write_file.
type WriteOutput struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
}

func (f *fileTools) writeFile(ctx context.Context, in WriteInput) (WriteOutput, error) {
	var n int
	t, err := f.roots.do(in.Path, func(root *os.Root, t target) error {
		if t.rel == "." {
			return fmt.Errorf("%s is a directory", t.abs())
		}
		parent := filepath.Dir(t.rel)
		if in.CreateDirs {
			if err := root.MkdirAll(parent, 0o755); err != nil {
				return err
			}
		} else if _, err := root.Stat(parent); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("directory %s does not exist; pass create_dirs: true to create it", filepath.Join(t.dir, parent))
		}
		// Only regular files are written. The check comes before the open
		// (opening a device can do something by itself) and again on what
		// was opened, in case the name changed in between. O_NONBLOCK: a
		// FIFO must not hold the call until some reader opens it.
		if st, err := root.Stat(t.rel); err == nil && !st.Mode().IsRegular() {
			return notRegular(t, st.Mode())
		}
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC | syscall.O_NONBLOCK
		if in.Append {
			flags = os.O_WRONLY | os.O_CREATE | os.O_APPEND | syscall.O_NONBLOCK
		}
		file, err := root.OpenFile(t.rel, flags, 0o644)
		if errors.Is(err, syscall.ENXIO) {
			return notRegular(t, fs.ModeNamedPipe) // a FIFO nobody reads
		}
		if err != nil {
			return err
		}
		if st, err := file.Stat(); err != nil || !st.Mode().IsRegular() {
			file.Close()
			if err != nil {
				return err
			}
			return notRegular(t, st.Mode())
		}
		n, err = file.WriteString(in.Content)
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return WriteOutput{}, describe(t, err)
	}
	return WriteOutput{Path: t.abs(), BytesWritten: n}, nil
}

// ListInput is the input of list_dir.
type ListInput struct {
	Path       string `json:"path,omitempty" jsonschema_description:"Directory to list (default: the first allowed directory)."`
	Recursive  bool   `json:"recursive,omitempty" jsonschema_description:"List the whole tree below the directory."`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema_description:"Most entries to return."`
}

// Entry is one item of a directory listing.
type Entry struct {
	Name string `json:"name" jsonschema_description:"Name relative to the listed directory (sub/file.txt when recursive)."`
	Type string `json:"type" jsonschema:"enum=file,enum=dir,enum=symlink"`
	Size int64  `json:"size" jsonschema_description:"Size in bytes (0 for directories)."`
}

// ListOutput is the result of list_dir.
type ListOutput struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated" jsonschema_description:"True if there were more entries than max_entries."`
}

func (f *fileTools) listDir(ctx context.Context, in ListInput) (ListOutput, error) {
	maxEntries := limitOr(in.MaxEntries, DefaultMaxEntries, MaxEntriesLimit)
	out := ListOutput{Entries: []Entry{}}
	t, err := f.roots.do(in.Path, func(root *os.Root, t target) error {
		out.Entries, out.Truncated = out.Entries[:0], false
		return walk(ctx, root, t, func(p, rel string, d fs.DirEntry) error {
			if len(out.Entries) == maxEntries {
				out.Truncated = true
				return fs.SkipAll
			}
			out.Entries = append(out.Entries, entryOf(rel, d))
			if d.IsDir() && !in.Recursive {
				return fs.SkipDir
			}
			return nil
		})
	})
	if err != nil {
		return ListOutput{}, describe(t, err)
	}
	slices.SortFunc(out.Entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	out.Path = t.abs()
	return out, nil
}

func entryOf(name string, d fs.DirEntry) Entry {
	e := Entry{Name: name, Type: "file"}
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		e.Type = "symlink"
	case d.IsDir():
		e.Type = "dir"
	default:
		if info, err := d.Info(); err == nil {
			e.Size = info.Size()
		}
	}
	return e
}

// SearchInput is the input of search_files.
type SearchInput struct {
	Path       string `json:"path,omitempty" jsonschema_description:"Directory to search (default: the first allowed directory)."`
	Pattern    string `json:"pattern" jsonschema_description:"Glob matched against file names, e.g. *.go; with a slash, against the path relative to the directory."`
	Contains   string `json:"contains,omitempty" jsonschema_description:"Only report lines containing this text."`
	MaxResults int    `json:"max_results,omitempty" jsonschema_description:"Most matches to return."`
}

// Match is one search hit: a file, or a line of it when contains was given.
type Match struct {
	Path string `json:"path"`
	Line int    `json:"line,omitempty" jsonschema_description:"1-based line number."`
	Text string `json:"text,omitempty" jsonschema_description:"The matching line, cut to 300 bytes."`
}

// SearchOutput is the result of search_files.
type SearchOutput struct {
	Matches   []Match `json:"matches"`
	Truncated bool    `json:"truncated" jsonschema_description:"True if the search stopped at max_results."`
}

var errEnough = errors.New("enough results")

func (f *fileTools) searchFiles(ctx context.Context, in SearchInput) (SearchOutput, error) {
	if _, err := path.Match(in.Pattern, ""); err != nil || in.Pattern == "" {
		return SearchOutput{}, fmt.Errorf("pattern %q is not a valid glob (use *, ? and [...])", in.Pattern)
	}
	maxResults := limitOr(in.MaxResults, DefaultMaxResults, MaxResultsLimit)
	out := SearchOutput{Matches: []Match{}}
	t, err := f.roots.do(in.Path, func(root *os.Root, t target) error {
		out.Matches, out.Truncated = out.Matches[:0], false
		add := func(m Match) error {
			if len(out.Matches) == maxResults {
				out.Truncated = true
				return errEnough
			}
			out.Matches = append(out.Matches, m)
			return nil
		}
		err := walk(ctx, root, t, func(p, rel string, d fs.DirEntry) error {
			if d.IsDir() {
				if d.Name() == ".git" {
					return fs.SkipDir
				}
				return nil
			}
			subject := d.Name()
			if strings.Contains(in.Pattern, "/") {
				subject = rel
			}
			if ok, _ := path.Match(in.Pattern, subject); !ok {
				return nil
			}
			abs := filepath.Join(t.dir, filepath.FromSlash(p))
			if in.Contains == "" {
				return add(Match{Path: abs})
			}
			return searchLines(root, p, in.Contains, func(line int, text string) error {
				return add(Match{Path: abs, Line: line, Text: text})
			})
		})
		if errors.Is(err, errEnough) {
			return nil
		}
		return err
	})
	if err != nil {
		return SearchOutput{}, describe(t, err)
	}
	return out, nil
}

// searchLines reports each line of the file p that contains needle. Files
// that cannot be read, are large, or look binary are passed over.
func searchLines(root *os.Root, p, needle string, report func(line int, text string) error) error {
	// O_NONBLOCK: a FIFO among the files must not hold the search until
	// some writer opens it; it is passed over below as not regular.
	file, err := root.OpenFile(filepath.FromSlash(p), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer file.Close()
	if st, err := file.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxSearchFileSize {
		return nil
	}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if bytes.IndexByte(line, 0) >= 0 {
			return nil // binary
		}
		if !bytes.Contains(line, []byte(needle)) {
			continue
		}
		text := strings.TrimSpace(string(line))
		if len(text) > maxLineText {
			text = strings.ToValidUTF8(text[:maxLineText], "") + "…"
		}
		if err := report(n, text); err != nil {
			return err
		}
	}
	return nil // a line over 1 MiB ends the scan of that file quietly
}

// walk calls visit for each entry below the directory t, in lexical
// order, with its slash-separated path in root and its path relative to
// t; visit may return fs.SkipDir or fs.SkipAll. An unreadable
// subdirectory is left out, not fatal; an unreadable t, or the end of
// ctx, ends the walk with its error.
func walk(ctx context.Context, root *os.Root, t target, visit func(p, rel string, d fs.DirEntry) error) error {
	st, err := root.Stat(t.rel)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", t.abs())
	}
	start := filepath.ToSlash(t.rel)
	return fs.WalkDir(root.FS(), start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == start {
				return err
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == start {
			return nil
		}
		return visit(p, relTo(start, p), d)
	})
}

// relTo is p relative to the walk's start, both slash-separated fs paths.
func relTo(start, p string) string {
	if start == "." {
		return p
	}
	return strings.TrimPrefix(p, start+"/")
}

func limitOr(asked, def, hard int) int {
	switch {
	case asked <= 0:
		return def
	case asked > hard:
		return hard
	}
	return asked
}

// describe turns an os error about target t into a sentence for the model,
// naming t by its full path rather than by the name os.Root was given.
func describe(t target, err error) error {
	var pe *fs.PathError
	if t.dir == "" || !errors.As(err, &pe) {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", t.abs())
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("permission denied: %s", t.abs())
	}
	return fmt.Errorf("%s: %v", t.abs(), pe.Err)
}

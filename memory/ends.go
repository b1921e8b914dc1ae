package memory

import (
	"fmt"
	"strings"
)

// Ends is s as a request carries it within a budget of lines and bytes
// (0 bounds neither): whole when it fits, else its first lines and its
// last lines, cut at lines' ends where it can, with a stand-in between
// that names the handle of the whole (kept in a) and says exactly which
// bytes were left out and how to read them. A result's end is where the
// totals, the summary, the last error or the answer usually are, so the
// budget goes two parts to the head and one to the tail.
func (a *Artifacts) Ends(s string, lines, bytes int) string {
	if fits(s, lines, bytes) {
		return s
	}
	headLines, tailLines := split(lines)
	headBytes, tailBytes := split(bytes)
	head := headOf(s, headLines, headBytes)
	tail := tailOf(s[len(head):], tailLines, tailBytes)
	h := a.keep(s)
	from, to := len(head), len(s)-len(tail)
	total := lineCount(s)
	shown := lineCount(head) + lineCount(tail)
	return fmt.Sprintf("%s\n…[artifact %s: %d of %d lines (bytes %d to %d of %d) are left out here; "+
		`read them with read_artifact {"handle": %q, "offset": %d, "length": %d}, or find lines with {"handle": %q, "grep": "a regular expression"}]`+"\n%s",
		strings.TrimSuffix(head, "\n"), h, total-shown, total, from, to, len(s), h, from, to-from, h, tail)
}

// fits reports whether s is within lines lines and bytes bytes; a last
// line that ends in a newline counts as one line.
func fits(s string, lines, bytes int) bool {
	if bytes > 0 && len(s) > bytes {
		return false
	}
	return lines <= 0 || lineCount(s) <= lines
}

// lineCount is how many lines s has, a last one without a newline
// included.
func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// split shares a budget between a head (two thirds) and a tail (the
// rest); 0 is no bound for either.
func split(n int) (head, tail int) {
	if n <= 0 {
		return 0, 0
	}
	head = max(1, (2*n+2)/3)
	return head, max(1, n-head)
}

// headOf is s's first lines within the bounds, ending with its newline:
// at least the start of the first line, cut at a character's start.
func headOf(s string, lines, bytes int) string {
	end := len(s)
	if lines > 0 {
		i := 0
		for n := 0; n < lines && i < len(s); n++ {
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
				break
			}
			i += j + 1
		}
		end = i
	}
	if bytes > 0 && end > bytes {
		end = bytes
		if nl := strings.LastIndexByte(s[:end], '\n'); nl >= 0 {
			end = nl + 1
		} else {
			end = runeStart(s, end)
		}
	}
	return s[:end]
}

// tailOf is s's last lines within the bounds: at least the end of the
// last line, cut at a character's start.
func tailOf(s string, lines, bytes int) string {
	start := 0
	if lines > 0 {
		i := len(strings.TrimSuffix(s, "\n"))
		for n := 0; n < lines; n++ {
			j := strings.LastIndexByte(s[:i], '\n')
			if j < 0 {
				i = -1
				break
			}
			i = j
		}
		start = i + 1
	}
	if bytes > 0 && len(s)-start > bytes {
		start = len(s) - bytes
		if nl := strings.IndexByte(s[start:], '\n'); nl >= 0 && start+nl+1 < len(strings.TrimSuffix(s, "\n")) {
			start += nl + 1
		} else {
			for start < len(s) && s[start]&0xC0 == 0x80 {
				start++
			}
		}
	}
	return s[start:]
}

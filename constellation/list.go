package constellation

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Summary is a constellation as GET /api/constellations lists it: what
// it was asked and how it stands, without its nodes (GET
// /api/constellations/{id} has the whole graph).
type Summary struct {
	ID      string `json:"id"`
	Request string `json:"request"`
	Status  Status `json:"status"`
	Version int    `json:"version"`
	// Answer and Error are cut to SummaryTextLimit characters (a cut
	// text ends with "…"; Cut names the fields cut).
	Answer       string     `json:"answer,omitempty"`
	Error        string     `json:"error,omitempty"`
	Cut          []string   `json:"cut,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	PlannerSteps int        `json:"planner_steps"`
	Nodes        NodeCounts `json:"nodes"`
}

// NodeCounts counts a graph's nodes by status.
type NodeCounts struct {
	Total     int `json:"total"`
	Pending   int `json:"pending"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// SummaryTextLimit is how many characters of a request, answer or error
// a Summary keeps.
const SummaryTextLimit = 500

// The list's page sizes: ?limit= defaults to DefaultPageLimit and may
// not exceed MaxPageLimit.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 500
)

// Summarize is g's Summary.
func Summarize(g *Graph) Summary {
	s := Summary{ID: g.ID, Status: g.Status, Version: g.Version, CreatedAt: g.CreatedAt, PlannerSteps: g.PlannerSteps}
	var cut bool
	if s.Request, cut = cutText(g.Request); cut {
		s.Cut = append(s.Cut, "request")
	}
	if s.Answer, cut = cutText(g.Answer); cut {
		s.Cut = append(s.Cut, "answer")
	}
	if s.Error, cut = cutText(g.Error); cut {
		s.Cut = append(s.Cut, "error")
	}
	s.Nodes.Total = len(g.Nodes)
	for _, n := range g.Nodes {
		switch n.Status {
		case NodePending:
			s.Nodes.Pending++
		case NodeRunning:
			s.Nodes.Running++
		case NodeCompleted:
			s.Nodes.Completed++
		case NodeFailed:
			s.Nodes.Failed++
		case NodeCancelled:
			s.Nodes.Cancelled++
		}
	}
	return s
}

func cutText(s string) (string, bool) {
	if utf8.RuneCountInString(s) <= SummaryTextLimit {
		return s, false
	}
	n := 0
	for i := range s {
		if n == SummaryTextLimit-1 {
			return s[:i] + "…", true
		}
		n++
	}
	return s, false
}

// summaryStore is a Store that lists its constellations' summaries
// without reading or copying whole graphs (ServerStore, MemoryStore).
// reread says whether a running constellation's graph must be read
// again: it is not running in this process (whose saves the store has
// seen), so another server may be running it.
type summaryStore interface {
	Summaries(ctx context.Context, reread func(id string) bool) ([]Summary, error)
}

// Summaries lists every constellation's summary, newest first (by
// creation time, then id).
func (o *Orchestrator) Summaries(ctx context.Context) ([]Summary, error) {
	var out []Summary
	if ss, ok := o.opts.Store.(summaryStore); ok {
		var err error
		reread := func(id string) bool {
			o.mu.Lock()
			defer o.mu.Unlock()
			return o.running[id] == nil
		}
		if out, err = ss.Summaries(ctx, reread); err != nil {
			return nil, err
		}
	} else {
		gs, err := o.List(ctx)
		if err != nil {
			return nil, err
		}
		out = make([]Summary, len(gs))
		for i, g := range gs {
			out[i] = Summarize(g)
		}
	}
	slices.SortFunc(out, newestFirst)
	return out, nil
}

func newestFirst(a, b Summary) int {
	if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
		return c
	}
	return cmp.Compare(b.ID, a.ID)
}

// Page is one page of the list.
type Page struct {
	Constellations []Summary `json:"constellations"`
	// Next is the cursor of the page after this one; empty on the last.
	Next string `json:"next,omitempty"`
}

// ListPage is the page of at most limit summaries that follows cursor
// (empty: the newest). The list is newest first and a cursor names the
// last summary of its page (its creation time and id), so a page's
// next one is the same whatever starts meanwhile: new constellations
// are newer, and come before the first page.
func (o *Orchestrator) ListPage(ctx context.Context, limit int, cursor string) (Page, error) {
	if limit < 1 || limit > MaxPageLimit {
		return Page{}, fmt.Errorf("limit %d is out of range: give 1 to %d (default %d)", limit, MaxPageLimit, DefaultPageLimit)
	}
	var after *Summary
	if cursor != "" {
		c, err := decodeCursor(cursor)
		if err != nil {
			return Page{}, err
		}
		after = &c
	}
	all, err := o.Summaries(ctx)
	if err != nil {
		return Page{}, err
	}
	start := 0
	if after != nil {
		// The first summary after the cursor's, in list order.
		start, _ = slices.BinarySearchFunc(all, *after, func(s, key Summary) int {
			if newestFirst(s, key) <= 0 {
				return -1
			}
			return 1
		})
	}
	end := min(start+limit, len(all))
	p := Page{Constellations: all[start:end]}
	if p.Constellations == nil {
		p.Constellations = []Summary{}
	}
	if end < len(all) {
		p.Next = encodeCursor(all[end-1])
	}
	return p, nil
}

// ErrBadCursor says a cursor is not one the list gave.
var ErrBadCursor = errors.New("the cursor is not one this list gave")

// A cursor is the last summary's creation time (Unix nanoseconds) and
// id, base64url: opaque to callers, readable by any server of a cluster.
func encodeCursor(s Summary) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(s.CreatedAt.UnixNano(), 10) + "/" + s.ID))
}

func decodeCursor(c string) (Summary, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		ns, id, ok := strings.Cut(string(b), "/")
		if n, perr := strconv.ParseInt(ns, 10, 64); ok && perr == nil && id != "" {
			return Summary{ID: id, CreatedAt: time.Unix(0, n).UTC()}, nil
		}
	}
	return Summary{}, fmt.Errorf("%w (%q): give the next value of the page before, or no cursor for the newest", ErrBadCursor, c)
}

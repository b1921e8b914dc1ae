package desktop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Wait is what WaitFor waits for: a control of Role (exact, any case)
// whose name or text contains Name (any case), in Window ("" the open
// dialog if any, else the active window); and/or a window whose title
// contains Title (Window's, or any window's when none is named). Every
// condition given must hold at once.
type Wait struct {
	Window, Role, Name, Title string
	// Timeout bounds the wait (default DefaultWaitTimeout, at most
	// MaxWaitTimeout).
	Timeout time.Duration
}

// Bounds of WaitFor.
const (
	DefaultWaitTimeout = 10 * time.Second
	MaxWaitTimeout     = 2 * time.Minute
)

// maxListed bounds the lines of what is there that a failed wait lists.
const maxListed = 3000

// WaitFor waits until what w names is there, rather than acting blind on
// a window that is still loading or changing. It reads the window again
// at each accessibility event (or each settle time, for toolkits that
// send none) and returns the matching controls' lines, as observe gives
// them, with their ids; past the timeout it fails with what is there.
func (d *Desktop) WaitFor(ctx context.Context, w Wait) (string, error) {
	if w.Role == "" && w.Name == "" && w.Title == "" {
		return "", errors.New("nothing to wait for: give role and/or name (a control), or title (a window's title)")
	}
	if w.Timeout <= 0 {
		w.Timeout = DefaultWaitTimeout
	}
	if w.Timeout > MaxWaitTimeout {
		return "", fmt.Errorf("timeout %s: at most %s", w.Timeout, MaxWaitTimeout)
	}
	start := time.Now()
	deadline := time.NewTimer(w.Timeout)
	defer deadline.Stop()
	for {
		wake, found, missing, err := d.look(ctx, w)
		if err != nil {
			return "", err
		}
		if missing == "" {
			return fmt.Sprintf("found after %s: %s", seconds(time.Since(start)), found), nil
		}
		select {
		case <-wake:
			time.Sleep(eventBurst)
		case <-time.After(d.opts.Settle):
		case <-deadline.C:
			return "", fmt.Errorf("not found in %s: %s", seconds(w.Timeout), missing)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// look reads once what w waits for: what it found, or what is missing
// (with what is there), and a channel closed at the next event.
func (d *Desktop) look(ctx context.Context, w Wait) (wake <-chan struct{}, found, missing string, err error) {
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, "", "", err
	}
	defer unlock()
	wake = d.a.changes()
	var win Window
	if w.Title != "" && w.Window == "" {
		ws, err := d.windows(ctx)
		if err != nil {
			return nil, "", "", err
		}
		var match []Window
		for _, x := range ws {
			if containsFold(x.Title, w.Title) {
				match = append(match, x)
			}
		}
		if len(match) == 0 {
			return wake, "", fmt.Sprintf("no window's title contains %q; the windows: %s", w.Title, windowList(ws)), nil
		}
		win = match[0]
		if w.Role == "" && w.Name == "" {
			return wake, fmt.Sprintf("window %s %q", win.ID, win.Title), "", nil
		}
	} else {
		if win, _, err = d.window(ctx, w.Window); err != nil {
			return nil, "", "", err
		}
		if w.Title != "" && !containsFold(win.Title, w.Title) {
			return wake, "", fmt.Sprintf("window %s's title is %q, without %q", win.ID, win.Title, w.Title), nil
		}
		if w.Role == "" && w.Name == "" {
			return wake, fmt.Sprintf("window %s %q", win.ID, win.Title), "", nil
		}
	}
	// Read afresh: a tree read before is reused while the objects it
	// read send no events, which misses what arrives under others
	// (Chromium's page).
	delete(d.trees, win.ref)
	obs, err := d.observe(ctx, win, ObserveOptions{})
	if err != nil {
		return nil, "", "", err
	}
	p := Page{Role: w.Role, Name: w.Name}
	var lines []string
	for _, c := range obs.Controls {
		if p.keeps(c, obs.Window) {
			lines = append(lines, c.line())
		}
	}
	where := fmt.Sprintf("window %s %q", obs.Window.ID, obs.Window.Title)
	if len(lines) > 0 {
		return wake, fmt.Sprintf("in %s:\n%s", where, strings.Join(lines, "\n")), "", nil
	}
	return wake, "", fmt.Sprintf("no control with %s in %s; it has %d controls:\n%s", p.filters(), where, len(obs.Controls), listed(obs.Controls)), nil
}

// listed is the controls' lines up to maxListed characters, saying how
// many more there are.
func listed(cs []Control) string {
	var b strings.Builder
	for i, c := range cs {
		l := c.line()
		if b.Len()+len(l) > maxListed {
			fmt.Fprintf(&b, "... and %d more (observe lists them all)", len(cs)-i)
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

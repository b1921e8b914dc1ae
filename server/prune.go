package server

import (
	"time"

	"github.com/saucerhq/saucer/trajectory"
)

// DefaultPruneEvery is how often a server prunes its recorded runs
// (Options.KeepRuns) while it runs, when Options.PruneEvery is zero.
const DefaultPruneEvery = time.Hour

// pruneRuns removes, when the server starts and every PruneEvery after,
// the recorded runs KeepRuns does not keep, until the server stops. A
// server runs for weeks: pruning only at its start would let its runs
// directory grow without bound.
func (s *Server) pruneRuns() {
	every := s.opts.PruneEvery
	if every <= 0 {
		every = DefaultPruneEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.PruneRuns()
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PruneRuns removes the recorded runs Options.KeepRuns does not keep from
// Options.RunsDir, now, and returns the directories it removed. The runs
// of the server's unended tasks are kept whatever their age or size (the
// pruning itself also keeps any run that may be running elsewhere; see
// trajectory.Prune). What it cannot remove is logged.
func (s *Server) PruneRuns() []string {
	if s.opts.RunsDir == "" || s.opts.KeepRuns == (trajectory.Keep{}) {
		return nil
	}
	var running []string
	s.mu.Lock()
	for id, t := range s.tasks {
		if !t.ended() {
			running = append(running, id, id+".before-restart")
		}
	}
	s.mu.Unlock()
	removed, err := trajectory.Prune(s.opts.RunsDir, s.opts.KeepRuns, time.Now(), running...)
	if len(removed) > 0 {
		s.opts.Logf("record.keep removed %d old runs from %s", len(removed), s.opts.RunsDir)
	}
	if err != nil {
		s.opts.Logf("warning: record.keep: %v", err)
	}
	return removed
}

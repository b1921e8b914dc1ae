// Package evals will hold eval suites, their runner, checkers, metrics and
// reports, and replay-based evaluation against recorded device sessions.
// It is planned work (see the issue "Record every session, replay it, and
// evaluate agents against recorded device sessions") and has no code yet.
package evals

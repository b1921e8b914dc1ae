// Package trajectory will hold the recorded-session format: one JSON event
// per line (session start, steps, model requests and replies, commands,
// results, state transitions, session end) plus content-addressed artifacts,
// with a writer and a reader. The agent package already reports every such
// event through agent.Options.Observer; this package will write them down.
package trajectory

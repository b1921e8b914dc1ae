package constellation

import (
	"errors"
	"fmt"
	"os"

	"github.com/saucerhq/saucer/evals"
)

// Replayed is a recording's offline replay (ReplayFile).
type Replayed struct {
	// File is the recording replayed; Events its events.
	File   string
	Events []Event
	// Versions are the graph versions the replay rebuilt, up to where it
	// stopped; Final is the last of them (nil when there is none).
	Versions []*Graph
	Final    *Graph
	// Ended says the recording holds the constellation's end; a recording
	// cut short (a server that stopped, a crash) replays up to where it
	// stops.
	Ended bool
	// Divergence says where the replay parts from the recording (nil when
	// it does not).
	Divergence *ReplayError
}

// ReplayFile replays the constellation recording at path (the
// RUNS/constellations/ID.jsonl a server writes, or a folder holding one)
// offline, as Replay does. A replay that parts from the recording is not
// an error: Divergence says where. An error says the file could not be
// read as a recording, and what to give instead.
func ReplayFile(path string) (*Replayed, error) {
	file, err := evals.ConstellationRecording(path)
	if err != nil {
		return nil, err
	}
	if file == "" {
		return nil, fmt.Errorf("%s is not a constellation's recording: give RUNS/constellations/ID.jsonl (its first line is the constellation's graph event)", path)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	events, err := ReadRecording(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	r := &Replayed{File: file, Events: events}
	for _, e := range events {
		r.Ended = r.Ended || e.Kind == "end"
	}
	r.Versions, err = Replay(events)
	if len(r.Versions) > 0 {
		r.Final = r.Versions[len(r.Versions)-1]
	}
	if err != nil && !errors.As(err, &r.Divergence) {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return r, nil
}

// Nodes is how each node of g ended, for an eval's node checks.
func evalNodes(g *Graph) []evals.ConstellationNode {
	out := make([]evals.ConstellationNode, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		out = append(out, evals.ConstellationNode{ID: n.ID, Device: n.Device, Status: string(n.Status), Attempts: n.Attempts,
			Result: n.Result, Error: n.Error})
	}
	return out
}

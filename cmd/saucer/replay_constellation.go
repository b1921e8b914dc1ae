package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/saucerhq/saucer/constellation"
)

// replayConstellation replays a constellation's recording offline and
// prints it as it goes: the graph's versions, the planner's edits (those
// refused too), each node's start and end, then the final graph, status
// and answer. A divergence is printed with where it is, and exits 1.
func replayConstellation(cmd *cobra.Command, f *replayFlags, file string) error {
	if f.liveModel || f.record != "" {
		return errors.New("replay: " + file + " is a constellation's recording, which replays offline only: " +
			"--live-model and --record take a task's run directory (runs/<id>)")
	}
	r, err := constellation.ReplayFile(file)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	out := cmd.OutOrStdout()
	upTo := len(r.Events) // the events replayed alike
	if r.Divergence != nil {
		upTo = r.Divergence.Event - 1
	}
	if !f.quiet {
		id, request := "", ""
		if len(r.Events) > 0 {
			id = r.Events[0].Constellation
			if g := r.Events[0].Graph; g != nil {
				request = g.Request
			}
		}
		fmt.Fprintf(out, "replaying constellation %s (%s): %q, offline\n", id, file, request)
		for _, e := range r.Events[:upTo] {
			printConstellationEvent(out, e)
		}
	}
	planner, starts := 0, 0
	for _, e := range r.Events[:upTo] {
		switch e.Kind {
		case "planner":
			planner++
		case "node_start":
			starts++
		}
	}
	if g := r.Final; g != nil && r.Divergence == nil {
		if !f.quiet {
			fmt.Fprintln(out, g.Summary())
		}
		fmt.Fprintf(out, "%s\n", g.Status)
		if g.Answer != "" {
			fmt.Fprintln(out, g.Answer)
		} else if g.Error != "" {
			fmt.Fprintln(out, g.Error)
		}
	}
	d := r.Divergence
	switch {
	case d != nil:
		where := fmt.Sprintf("event %d of %d (%s, graph version %d", d.Event, len(r.Events), d.Kind, d.Version)
		if d.Node != "" {
			where += ", node " + d.Node
		}
		fmt.Fprintf(out, "DIVERGED from the recording at %s): %s\n", where, d.What)
		return exitError{1}
	case !r.Ended:
		fmt.Fprintf(out, "incomplete recording, identical up to where it stops: %d graph versions, %d planner steps, %d node attempts; "+
			"it has no end event (the server stopped or crashed before the constellation ended)\n", len(r.Versions), planner, starts)
		return nil
	}
	fmt.Fprintf(out, "identical to the recording: %d graph versions, %d planner steps, %d node attempts\n", len(r.Versions), planner, starts)
	return nil
}

// printConstellationEvent prints one recorded event, one line.
func printConstellationEvent(out io.Writer, e constellation.Event) {
	switch e.Kind {
	case "graph":
		n, edges := 0, 0
		if e.Graph != nil {
			n, edges = len(e.Graph.Nodes), len(e.Graph.Edges)
		}
		fmt.Fprintf(out, "  graph version %d: %d node(s), %d edge(s)\n", e.Version, n, edges)
	case "planner":
		var ok, refused []string
		for _, ed := range e.Edits {
			name := ed.Op
			if id, _ := ed.Args["id"].(string); id != "" {
				name += " " + id
			} else if from, _ := ed.Args["from"].(string); from != "" {
				to, _ := ed.Args["to"].(string)
				name += " " + from + "→" + to
			}
			if ed.OK {
				ok = append(ok, name)
			} else {
				refused = append(refused, name+" ("+oneLine(ed.Reason, 120)+")")
			}
		}
		line := fmt.Sprintf("  planner: %s, %d edit(s)", e.Status, len(ok))
		if len(ok) > 0 {
			line += ": " + strings.Join(ok, ", ")
		}
		if len(refused) > 0 {
			line += fmt.Sprintf("; %d refused: %s", len(refused), strings.Join(refused, "; "))
		}
		if e.Answer != "" {
			line += ": " + oneLine(e.Answer, 200)
		}
		fmt.Fprintln(out, line)
	case "node_start":
		fmt.Fprintf(out, "  %s started on %s (attempt %d)\n", e.Node, e.Device, e.Attempt)
	case "node_end":
		what := e.Status
		switch o := e.Outcome; {
		case e.MovedTo != "":
			what = "moved to " + e.MovedTo + " (device lost)"
		case o == nil:
		case o.OK:
			what += ": " + oneLine(o.Result, 200)
		case e.Status == "pending":
			what = "will be tried again: " + oneLine(o.Error, 200)
		case o.Error != "":
			what += ": " + oneLine(o.Error, 200)
		}
		fmt.Fprintf(out, "  %s on %s: %s\n", e.Node, e.Device, what)
	case "end":
		fmt.Fprintf(out, "  end (graph version %d): %s\n", e.Version, e.Status)
	}
}

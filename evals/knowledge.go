package evals

import (
	"context"

	"github.com/saucerhq/saucer/strategy"
	"github.com/saucerhq/saucer/trajectory"
)

// RecordedKnowledge is a Retriever that gives each agent what the
// recorded session's agent of the same name was given: a replay's
// prompts are then the recorded ones, whatever the knowledge store holds
// now (adding entries moves the scores). An agent the recording gave
// nothing gets nothing.
func RecordedKnowledge(tr *trajectory.Trajectory) strategy.Retriever {
	given := map[string]strategy.Retrieved{}
	for _, e := range tr.Events {
		if e.Type == trajectory.TypeStep && e.Knowledge != nil {
			if _, seen := given[e.Agent]; !seen {
				given[e.Agent] = strategy.Retrieved{Text: e.Knowledge.Text, Sources: e.Knowledge.Sources}
			}
		}
	}
	return strategy.RetrieverFunc(func(_ context.Context, q strategy.Query) (strategy.Retrieved, error) {
		return given[q.Agent], nil
	})
}

package serve

import (
	"bytes"
	"context"
	"fmt"

	"github.com/saucerhq/saucer/evals"
	"github.com/saucerhq/saucer/server"
	"github.com/saucerhq/saucer/trajectory"
)

// Review is the server's review through package evals: replays of
// recorded runs, compared with red hiding secrets as the recording did,
// and eval reports read and compared as saucer eval writes and compares
// them. Start sets it; a program that calls server.New itself passes it
// as server.Options.Review.
func Review(red *trajectory.Redactor) server.Review { return review{red: red} }

type review struct{ red *trajectory.Redactor }

func (v review) Replay(ctx context.Context, tr *trajectory.Trajectory) (status, answer, diff string, err error) {
	res, err := evals.Replay(ctx, tr, evals.ReplayOptions{Redactor: v.red})
	if err != nil {
		return "", "", "", err
	}
	return string(res.Outcome.Status), res.Outcome.Answer, res.Report(), nil
}

func (review) ReadEval(dir string) (server.EvalReport, error) {
	rep, err := evals.ReadReport(dir)
	if err != nil {
		return server.EvalReport{}, err
	}
	return server.EvalReport{Suite: rep.Suite, Cases: rep.Metrics.Cases, Trials: rep.Metrics.Trials, SuccessRate: rep.Metrics.SuccessRate}, nil
}

func (review) CompareEvals(dirA, dirB string) (any, string, error) {
	var reps [2]*evals.Report
	for i, dir := range []string{dirA, dirB} {
		rep, err := evals.ReadReport(dir)
		if err != nil {
			return nil, "", fmt.Errorf("reading the eval report in %s: %w", dir, err)
		}
		reps[i] = rep
	}
	c := evals.Compare(reps[0], reps[1])
	var b bytes.Buffer
	c.Write(&b)
	return c, b.String(), nil
}

// Package evals evaluates agents: eval suites (YAML, see README.md and
// suite.schema.json) of cases on recorded or live local devices, a runner
// with parallel workers, per-trial limits and a resumable results
// directory, checkers (final device state, tool-call sequences, final
// answers, an LLM judge, expected failures), metrics (success rate, pass@k
// and pass^k, step success, tokens, cost, wall time per phase, a failure
// taxonomy), reports (JSON, JUnit XML, Markdown, a self-contained HTML
// walkthrough), comparisons of two runs, and shards: one deterministic
// share of a suite's cases per machine (Options.Shard), merged back into
// the report of one run (Merge).
//
// It also replays recorded sessions (Replay: recorded model replies and
// recorded device, or a live model on the recorded device) and scores a
// model step by step on a gold recording (EvaluateSteps, as Mind2Web
// does, with the final answer too). Package agentbench imports
// AgentBench's OS tasks as a suite.
package evals

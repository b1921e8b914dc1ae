// Package trajectory is the recorded-session format (saucer.trajectory/v1):
// what a session did, written down so that it can be read, replayed
// offline and evaluated.
//
// # Layout
//
// A trajectory is a directory:
//
//	runs/20250102-030405-a1b2c3/
//	  trajectory.jsonl   one JSON event per line
//	  artifacts/         large values, named by the SHA-256 of their content
//
// # Events
//
// Every line has "seq" (1, 2, 3, ... without gaps), "time" (RFC 3339, UTC)
// and "type"; the other fields depend on the type (event.schema.json is the
// JSON Schema of a line, and the reader checks the same requirements):
//
//   - session_start (always first): "session" with the id, the format, the
//     task, the model spec and mode, the Saucer version (which identifies
//     the built-in prompts), the effective config as YAML with secrets
//     redacted, the prompt override directory and its digest, the device
//     info, the working directory and the apps.
//   - agent_start, agent_end: an agent begins or ends; agent_end carries
//     an app agent's "note" (status and result) or the error that ended it.
//   - model_call: "call" with its number n, the full request (messages,
//     tools, options), the raw response (message with tool calls, usage,
//     finish reason, model) or the error (kind, message and, when the
//     provider asked for one, retry_after_ms), and the latency. A usage
//     with "estimated": true was counted by Saucer (llm/tokens) because
//     the server reported none; "spec" names the fallback that answered,
//     when one did. Re-asks and retries each make one. Each message is
//     written once: a request that repeats the start of an earlier one (as
//     an agent's next request does) carries "base": {call, messages,
//     tools}, the earlier call and how many of its messages (and whether
//     its tools) come first, and only its own messages after those.
//     Readers return full requests, so a recording grows with the steps,
//     not with their square; lines without a base (older recordings) read
//     as ever.
//   - dispatch: a batch of commands sent to the device in any phase
//     (discovery, observations, actions, an eval's checks) with their
//     results, the phase and the duration.
//   - decision: the parsed reply (thought, status, actions) as soon as the
//     model decided, before anything ran.
//   - step: the finished step: status, decision, commands and results,
//     observations, usage, attempts, duration, timings per phase, errors.
//   - transition: an agent's state machine moved "from" → "to".
//   - progress: a running command's report (call id, tool, progress,
//     total, message: its latest output lines, state, elapsed), named
//     with the agent and step that dispatched it; at most one a second per
//     command, plus its last (before the dispatch that brings its result,
//     or when a command left in the background ends). Their place depends
//     on timing: Normalize leaves them out.
//   - session_end (last when the session ended): status, answer, whether
//     it was cancelled, rounds, steps, usage, cost ("$0.0123", "~$0.0123
//     (estimated)" or "cost unknown", with cost_usd unless unknown),
//     error, the budget that stopped it (if one did), duration.
//
// Lines reach the file in batches (Writer, FlushAfter, WriteGap): when a
// step, an agent or the session ends (an end that comes within WriteGap,
// 50 ms, of the last write waits for the first line recorded after that),
// and at the latest FlushAfter after they were written. A recording cut short (a full disk: the writer drops the part
// of a line that did not fit and writes nothing more; a crash, which loses
// the lines still in memory) has no session_end.
// Read returns what it has, leaving out a last line torn in the middle
// (Trajectory.Torn), and Stops says where it stops.
//
// Agent names are "host", "app:<app>#<n>", and in eval trials "check" (a
// state check's commands) and "judge" (a judge's model call).
//
// # Artifacts
//
// Values under the keys content, data, arguments, parameters and result
// that are at least Options.ArtifactThreshold bytes long (4096 by default)
// are moved into artifacts/<sha256>.<ext> and replaced in the line by a
// reference:
//
//	{"$artifact": "sha256:<hex>", "path": "artifacts/<hex>.png",
//	 "encoding": "base64", "media_type": "image/png", "size": 48213}
//
// (These are the recording's own. A value the model was shown only by its
// head and a handle, a memory.Artifacts stand-in, is in the request as the
// model saw it; the whole is in the result or call that produced it, and
// so in a file here when it is large.)
//
// encoding "text" stands for a string, "base64" for image data (the file is
// the decoded image: screenshots are viewable as they are), "json" for any
// JSON value (a tool's result). The same content is stored once, however
// often it recurs (a system prompt sent at every step, say). The reader
// puts every value back and checks each artifact against its digest.
//
// # Secrets
//
// A Writer redacts before anything reaches the disk, lines and artifacts
// alike: the literal secrets it is given (API keys from the config and the
// environment, record.redact entries) and the shapes of common keys
// (DefaultPatterns) become [REDACTED]. Replay redacts live values the same
// way before comparing them with recorded ones. Raw JSON a device sent (a
// command's result, a raw value in parameters) is written as it came,
// escapes included; a string of it with an escape encoding/json would not
// write (`\u0041` for "A", `\/`) is redacted by what it decodes to, and
// written again, redacted, when it holds a secret. Only raw values with a
// backslash are looked at again, and only their strings with such an
// escape are decoded.
//
// A line is the bytes json.Marshal gives for its Event, written by an
// encoder of the package's own, without reflection. A server records the
// same long values in every task (its config, its agents' prompts, tool
// definitions, device info): their encodings are kept, by content, and a
// Redactor passes over the parts of a line (a long value, a message, a
// tool list, a result...) that it has seen in a line with nothing to
// redact. It does so only when none of its secrets and patterns can match
// a quote, an edge of the text or nothing, so that every match lies
// wholly inside such a part or wholly outside it; with a record.redact
// pattern that can, or one without a literal to start from, it reads
// every byte of every line.
//
// # Versioning
//
// The format is "saucer.trajectory/v1". Additive changes (new optional
// fields, new event types readers may skip) keep v1; anything else is v2,
// and a reader refuses a major version it does not know.
package trajectory

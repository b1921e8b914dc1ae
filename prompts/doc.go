// Package prompts holds what Saucer says to models and how it reads their
// answers: the prompt templates of the host and app agents, the JSON reply
// format with its schema, the control tools, and a tolerant reply parser.
//
// # Templates
//
// The defaults are embedded from templates/*.tmpl; each file defines the
// template named after it without the extension:
//
//	host_system, host_user, host_examples, host_status   rendered with HostData
//	app_system, app_user, app_examples, app_status      rendered with AppData
//	device, tools, notes                                partials (DeviceInfo, []ToolInfo, []Note)
//
// A request is a stable prefix and a live end. The system templates (with
// the examples, the device and, in json mode, the reply schema and the
// app's tools) and the user templates (the request, the subtask) are
// rendered once per agent and open every request, so providers' prompt
// caches hit; the agent's earlier steps follow; the status templates end
// every request and are rendered anew at each step: the notes of finished
// subtasks (the blackboard), this step's observations, the step or round
// and its budget, with a warning at the last one.
//
// Load with an override directory replaces any of them, or adds new ones,
// from *.tmpl files of the same names. Templates run with missingkey=error
// and may use, besides text/template's built-ins:
//
//	json X          X as compact JSON (a json.RawMessage is compacted as is)
//	pretty X        X as JSON indented by two spaces
//	indent N S      S with N spaces before every non-empty line
//	join SEP LIST   the elements of LIST joined by SEP
//	upper, lower, trim, firstLine S
//	add A B         A+B, for numbering from 1
//	replySchema S…  the reply schema with the status enum narrowed to S…
//
// Any template text/template runs works. Those that keep to text,
// actions, if, with, range over lists, template calls, fields, variables,
// the functions above and the comparisons (and, or, not, len, index, eq,
// ne, lt, le, gt, ge) are rendered several times faster, by a walk of
// their parse tree that calls functions directly; the built-in templates
// all do. Others (printf, methods, maps ranged over, break) are rendered
// by text/template, as are renders that meet a missing key or a
// function's error, so that the text and the errors are always
// text/template's.
//
// # Replies
//
// In json mode a model answers with one Reply object; ParseReply reads it
// tolerantly and returns a *ParseError whose text is meant to be sent back
// to the model. In tools mode the model calls the control tools
// (HostControlTools, AppControlTools) besides the app's tools;
// ParseArguments reads their possibly malformed arguments.
package prompts

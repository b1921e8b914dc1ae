package prompts

import "strings"

// WithAnswerFormat returns a set that renders as s does, with format as
// the AnswerFormat of the HostData and AppData it renders (unless they
// carry one): the rule a task's final answer must follow, such as "a
// single integer, digits only". A session renders every agent's prompts
// from one set, and the format is fixed for the task as the templates
// are, so the set made for the task gives it to each agent's data. The
// set shares s's parsed templates; its own kept renders hold the format.
// A blank format returns s.
func (s *Set) WithAnswerFormat(format string) *Set {
	format = strings.TrimSpace(format)
	if format == "" {
		return s
	}
	return &Set{root: s.root, files: s.files, funcs: s.funcs, fast: s.fast, fastSites: s.fastSites, answerFormat: format}
}

// AnswerFormat is the answer format the set gives the agents' data, ""
// for none.
func (s *Set) AnswerFormat() string { return s.answerFormat }

// withTask is data with the set's answer format in it, when data is an
// agent's and carries none.
func (s *Set) withTask(data any) any {
	if s.answerFormat == "" {
		return data
	}
	switch d := data.(type) {
	case HostData:
		if d.AnswerFormat == "" {
			d.AnswerFormat = s.answerFormat
			return d
		}
	case AppData:
		if d.AnswerFormat == "" {
			d.AnswerFormat = s.answerFormat
			return d
		}
	}
	return data
}

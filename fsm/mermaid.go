package fsm

import "strings"

// Mermaid draws role r's transition table as a Mermaid stateDiagram-v2: the
// start arrow to CONTINUE, one line per transition in table order, and an
// arrow out of each terminal state. The output is deterministic, so it can be
// kept as a golden file. It returns "" for an unknown role.
func Mermaid(r Role) string {
	rows, ok := tables[r]
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString("stateDiagram-v2\n")
	b.WriteString("    [*] --> " + string(Start) + "\n")
	for _, row := range rows {
		for _, to := range row.to {
			b.WriteString("    " + string(row.from) + " --> " + string(to) + "\n")
		}
	}
	for _, row := range rows {
		if row.from.Terminal() {
			b.WriteString("    " + string(row.from) + " --> [*]\n")
		}
	}
	return b.String()
}

// MermaidAll draws both roles: the host agent's diagram, a blank line, then
// the app agent's, each headed by a Mermaid comment naming the role. Each
// diagram is a complete Mermaid document; in Markdown put each in its own
// mermaid block (split at the blank line).
func MermaidAll() string {
	var b strings.Builder
	for i, r := range []Role{Host, App} {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("%% " + r.String() + "\n")
		b.WriteString(Mermaid(r))
	}
	return b.String()
}

package strategy

import (
	"fmt"
	"path"
	"strings"

	"github.com/saucerhq/saucer/command"
)

// ApprovalRule names commands that go to the Confirmer before they run,
// whatever the model said: by the tool's risk class (read, write,
// destructive, external; from meta "saucer/risk", else the MCP
// annotations), by tool ("namespace.tool" or "tool", glob patterns), and
// by an argument's value (Match is a glob over the argument as text). The
// fields that are set must all match.
type ApprovalRule struct {
	Risk     string `yaml:"risk,omitempty" json:"risk,omitempty"`
	Tool     string `yaml:"tool,omitempty" json:"tool,omitempty"`
	Argument string `yaml:"argument,omitempty" json:"argument,omitempty"`
	Match    string `yaml:"match,omitempty" json:"match,omitempty"`
}

// Validate reports a rule that could never match, or that matches all.
func (r ApprovalRule) Validate() error {
	if r.Risk == "" && r.Tool == "" && r.Argument == "" {
		return fmt.Errorf("approval rule %s: set risk, tool or argument", r)
	}
	switch r.Risk {
	case "", "read", "write", "destructive", "external":
	default:
		return fmt.Errorf("approval rule %s: risk %q is not read, write, destructive or external", r, r.Risk)
	}
	for _, p := range []string{r.Tool, r.Match} {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("approval rule %s: %q is not a valid pattern", r, p)
		}
	}
	if (r.Argument == "") != (r.Match == "") {
		return fmt.Errorf("approval rule %s: argument and match go together", r)
	}
	return nil
}

func (r ApprovalRule) String() string {
	var parts []string
	for _, f := range [][2]string{{"risk", r.Risk}, {"tool", r.Tool}, {"argument", r.Argument}, {"match", r.Match}} {
		if f[1] != "" {
			parts = append(parts, f[0]+": "+f[1])
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// matches reports whether the rule covers cmd, whose tool is info.
func (r ApprovalRule) matches(cmd command.Command, info *command.ToolInfo) bool {
	if r.Risk != "" && (info == nil || riskOf(info) != r.Risk) {
		return false
	}
	if r.Tool != "" {
		full, _ := path.Match(r.Tool, cmd.Namespace+"."+cmd.ToolName)
		bare, _ := path.Match(r.Tool, cmd.ToolName)
		if !full && !bare {
			return false
		}
	}
	if r.Argument != "" {
		v, ok := cmd.Parameters[r.Argument]
		if !ok {
			return false
		}
		text, isString := v.(string)
		if !isString {
			text = fmt.Sprint(v)
		}
		if ok, _ := path.Match(r.Match, text); !ok {
			return false
		}
	}
	return true
}

// riskOf is a tool's risk class: what the device says, else what its MCP
// annotations imply (MCP's defaults: not read-only, destructive).
func riskOf(t *command.ToolInfo) string {
	if r, ok := t.Meta["saucer/risk"].(string); ok && r != "" {
		return r
	}
	if ro, _ := t.Annotations["readOnlyHint"].(bool); ro {
		return "read"
	}
	if d, ok := t.Annotations["destructiveHint"].(bool); ok && !d {
		return "write"
	}
	return "destructive"
}

// approvalNeeded names the first rule that covers one of pc's commands.
func approvalNeeded(pc *Context) (string, bool) {
	rules := pc.limits.Approve
	if pc.limits.ConfirmDestructive {
		rules = append(rules[:len(rules):len(rules)], ApprovalRule{Risk: "destructive"})
	}
	for _, c := range pc.commands {
		var info *command.ToolInfo
		for i := range pc.tools {
			if pc.tools[i].Name == c.ToolName && pc.tools[i].Namespace == c.Namespace {
				info = &pc.tools[i]
			}
		}
		for _, r := range rules {
			if r.matches(c, info) {
				return fmt.Sprintf("%s.%s needs approval by the rule %s", c.Namespace, c.ToolName, r), true
			}
		}
	}
	return "", false
}

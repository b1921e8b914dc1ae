package prompts

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// controlNames are the control tools any agent may be offered; the
// templates name no other snake_case tool of Saucer's own.
var controlNames = []string{AssignTool, FinishTool, FailTool, AskUserTool, ApprovalTool, ReadArtifactTool, "command_status", "cancel_command"}

var snakeWord = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`)

// offered are the control tools each agent has in each mode: in json mode
// only assign_subtask, which the host writes as an action's function.
func offered(agent, mode string) []string {
	switch {
	case agent == "host" && mode == ModeTools:
		return names(HostControlTools())
	case agent == "host":
		return []string{AssignTool}
	case mode == ModeTools:
		return append(names(AppControlTools()), "command_status", "cancel_command")
	}
	return nil
}

func names(ts []ControlTool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

// Every template names only control tools its agent is offered in its
// mode: no finish_task in json mode, where FINISH is a status, and no
// FINISH where a host without apps is told how to end in tools mode.
func TestTemplatesNameOfferedTools(t *testing.T) {
	s := mustLoad(t, "")
	for _, mode := range []string{ModeJSON, ModeTools} {
		for _, name := range []string{"host_system", "host_user", "host_examples", "host_status", "app_system", "app_user", "app_examples", "app_status"} {
			agent, data := "host", any(hostData(mode))
			if strings.HasPrefix(name, "app_") {
				agent, data = "app", appData(mode)
			}
			got, err := s.Render(name, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range snakeWord.FindAllString(got, -1) {
				if slices.Contains(controlNames, w) && !slices.Contains(offered(agent, mode), w) {
					t.Errorf("%s (%s mode) names %s, which the %s agent is not offered", name, mode, w, agent)
				}
			}
		}
		// Without apps, the host is told how to end in its own mode's words.
		host := hostData(mode)
		host.Apps = nil
		got, err := s.Render("host_system", host)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{ModeJSON: "with FINISH, or FAIL.", ModeTools: "with finish_task, or fail_task."}[mode]
		if !strings.Contains(got, "No apps are available: answer from your own knowledge "+want) {
			t.Errorf("host_system without apps (%s mode):\n%s", mode, got)
		}
	}
}

// Each agent's ways to end speak of its own work: the app's of its
// subtask, the host's and the planner's of the whole request (the planner
// used to be offered the app's "Finish your subtask").
func TestControlToolsSpeakToTheirAgent(t *testing.T) {
	for _, c := range ConstellationControlTools() {
		if !strings.Contains(c.Description, "whole request") || strings.Contains(c.Description, "subtask") {
			t.Errorf("planner's %s: %q", c.Name, c.Description)
		}
	}
	if got := names(ConstellationControlTools()); !slices.Equal(got, []string{FinishTool, FailTool}) {
		t.Errorf("planner's control tools: %v", got)
	}
	for _, c := range AppControlTools() {
		if (c.Name == FinishTool || c.Name == FailTool) && !strings.Contains(c.Description, "subtask") {
			t.Errorf("app's %s: %q", c.Name, c.Description)
		}
	}
	for _, c := range HostControlTools() {
		if (c.Name == FinishTool || c.Name == FailTool) && strings.Contains(c.Description, "subtask") {
			t.Errorf("host's %s: %q", c.Name, c.Description)
		}
	}
	// read_artifact says that its handle is a string, which a handle made
	// of digits does not look like.
	for _, c := range AppControlTools() {
		if c.Name == ReadArtifactTool && !strings.Contains(string(c.Parameters), "as a string") {
			t.Errorf("read_artifact's schema: %s", c.Parameters)
		}
	}
}

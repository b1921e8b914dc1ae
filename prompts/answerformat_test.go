package prompts

import (
	"strings"
	"testing"
)

const integerRule = "a single integer, digits only, no words"

// A task's answer format is its own section of the first user turn, right
// after the request, in both agents, and the host's system prompt ties its
// finishing rule to it; nothing else changes (the texts without a format
// are TestGolden's).
func TestAnswerFormatSections(t *testing.T) {
	s := mustLoad(t, "")
	for _, mode := range []string{ModeJSON, ModeTools} {
		host, app := hostData(mode), appData(mode)
		section := "\n\n## Answer format\n" + integerRule + "\n"
		finish := "- finish_task(result) ends the task with the final answer for the user"
		if mode == ModeJSON {
			finish = "- status FINISH: actions is empty; result is the final answer for the user"
		}
		for _, c := range []struct {
			name  string
			plain any
			with  any
			edit  func(string) string
		}{
			{"host_user", host, withFormat(host), func(p string) string {
				return p + section + "Give the final answer in exactly this form, with nothing around it."
			}},
			{"app_user", app, withFormat(app), func(p string) string {
				return strings.Replace(p, "\n\n## Your subtask", section+
					"The final answer must be given in exactly this form. If your subtask finds it, report it that way.\n\n## Your subtask", 1)
			}},
			{"host_system", host, withFormat(host), func(p string) string {
				p = strings.Replace(p, finish+".", finish+", in the answer format.", 1)
				p = strings.Replace(p, "for exactly that answer, not for", "for exactly that answer, in the answer format, not for", 1)
				i := strings.Index(p, "\n- FINISH when the notes show")
				end := i + 1 + strings.Index(p[i+1:], "\n")
				return p[:end] + "\n- The request gives an answer format: the FINISH result is the answer alone, written exactly as that format says, with no words around it." + p[end:]
			}},
		} {
			plain, err := s.Render(c.name, c.plain)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Render(c.name, c.with)
			if err != nil {
				t.Fatal(err)
			}
			if want := c.edit(plain); got != want || got == plain {
				t.Errorf("%s.%s with a format:\n%s\nwant:\n%s", c.name, mode, got, want)
			}
		}
		// The status turns, which change every step, do not carry it.
		for _, name := range []string{"host_status", "app_status"} {
			var plain, with any = host, withFormat(host)
			if name == "app_status" {
				plain, with = app, withFormat(app)
			}
			a, _ := s.Render(name, plain)
			b, _ := s.Render(name, with)
			if a != b {
				t.Errorf("%s.%s changes with a format:\n%s", name, mode, b)
			}
		}
	}
}

func withFormat(data any) any {
	switch d := data.(type) {
	case HostData:
		d.AnswerFormat = integerRule
		return d
	case AppData:
		d.AnswerFormat = integerRule
		return d
	}
	return data
}

// A set made for a task gives its answer format to data that has none,
// renders exactly what data carrying the format renders (on the fast path
// and by text/template alike, again and again), and leaves the set it came
// from as it was.
func TestWithAnswerFormat(t *testing.T) {
	base := mustLoad(t, "")
	if base.WithAnswerFormat("  ") != base || base.AnswerFormat() != "" {
		t.Fatal("a blank format makes a new set")
	}
	task := base.WithAnswerFormat(" " + integerRule + "\n")
	if task.AnswerFormat() != integerRule {
		t.Fatalf("format %q", task.AnswerFormat())
	}
	for _, mode := range []string{ModeJSON, ModeTools} {
		plainHost, plainApp := hostData(mode), appData(mode)
		withHost, withApp := plainHost, plainApp
		withHost.AnswerFormat, withApp.AnswerFormat = integerRule, integerRule
		for _, name := range []string{"host_system", "host_user", "host_status", "app_system", "app_user", "app_status"} {
			plain, with := any(plainHost), any(withHost)
			if strings.HasPrefix(name, "app_") {
				plain, with = plainApp, withApp
			}
			want, err := base.Render(name, with)
			if err != nil {
				t.Fatal(err)
			}
			slow, err := slowRender(base, name, with)
			if err != nil || slow != want {
				t.Fatalf("%s.%s: text/template renders\n%s\nthe fast path\n%s", name, mode, slow, want)
			}
			for range 2 { // the second is a kept render
				got, err := task.RenderAgain(name, plain)
				if err != nil || got != want {
					t.Fatalf("%s.%s from the task's set (%v):\n%s\nwant\n%s", name, mode, err, got, want)
				}
			}
			before, _ := base.Render(name, plain)
			again, _ := base.RenderAgain(name, plain)
			if before != again || (strings.HasSuffix(name, "_user") && strings.Contains(before, "Answer format")) {
				t.Fatalf("%s.%s: the base set renders the task's format:\n%s", name, mode, before)
			}
		}
	}
	// Data that states its own format keeps it.
	own := hostData(ModeTools)
	own.AnswerFormat = "yes or no"
	if got, _ := task.Render("host_user", own); !strings.Contains(got, "\nyes or no\n") || strings.Contains(got, integerRule) {
		t.Errorf("the data's own format was replaced:\n%s", got)
	}
}

package prompts

import "testing"

// BenchmarkRenderStatus renders an app's status turn with a note, as every
// step of a replay does (the fast path), and the same by text/template.
func BenchmarkRenderStatus(b *testing.B) {
	s, err := Load("")
	if err != nil {
		b.Fatal(err)
	}
	note := Note{Subtask: "Write the line 'Hello from Saucer' to notes/hello.txt, creating the folder.", App: "files", Status: "FINISH", Result: "Wrote 18 bytes to notes/hello.txt."}
	app := AppData{Request: "tidy up", Subtask: "list notes", App: "shell", Notes: []Note{note}, Mode: ModeTools, Step: 2, MaxSteps: 6}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Render("app_status", app); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text-template", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := slowRender(s, "app_status", app); err != nil {
				b.Fatal(err)
			}
		}
	})
}

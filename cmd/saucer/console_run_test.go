package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// approveScript writes a file once a person approves it.
const approveScript = `
replies:
  - tool_calls: [{name: assign_subtask, arguments: {app: files, subtask: "Write ok to approved.txt"}}]
  - tool_calls:
      - {name: request_approval, arguments: {reason: "creates approved.txt"}}
      - {name: write_file, arguments: {path: approved.txt, content: "ok\n"}}
  - expect: "approved"
    tool_calls: [{name: finish_task, arguments: {result: "Wrote approved.txt"}}]
  - tool_calls: [{name: finish_task, arguments: {result: "approved.txt written"}}]
`

// TestRunWithConsole: saucer run --console, with no terminal, prints the
// console's address and a key for this run; its approval waits in the
// console (not declined for want of a terminal), a person logged in with
// the key approves it there, the command runs, and the run exits 0.
func TestRunWithConsole(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(t.TempDir(), "s.yaml")
	os.WriteFile(script, []byte(approveScript), 0o644)
	pr, pw := io.Pipe()
	root := newRoot()
	root.SetOut(pw)
	root.SetErr(pw)
	root.SetIn(strings.NewReader(""))
	root.SetArgs([]string{"run", "--console", "--no-record", "--model", "scripted:" + script, "--workdir", dir, "write approved.txt"})
	done := make(chan error, 1)
	go func() { done <- root.Execute(); pw.Close() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			t.Log(sc.Text())
			lines <- sc.Text()
		}
		close(lines)
	}()
	var url, key string
	re := regexp.MustCompile(`console at (http://[^ ]+/)#key=([0-9a-f]+) `)
	for url == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("saucer run ended without a console: %v", <-done)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				url, key = m[1], m[2]
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no console address printed")
		}
	}
	// While the approval waits in the browser, the terminal says so.
	announced := make(chan string, 1)
	go func() {
		for l := range lines {
			if strings.Contains(l, "waiting for you in the console") {
				select {
				case announced <- l:
				default:
				}
			}
		}
	}()

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Post(url+"api/login", "application/json", strings.NewReader(`{"key":"`+key+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ CSRF string }
	json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if resp.StatusCode != 200 || sess.CSRF == "" {
		t.Fatalf("login with the printed key: %d", resp.StatusCode)
	}
	// The server's stream says when the approval waits.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"api/events", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var task, pending string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	typ := ""
	type summary struct {
		ID   string
		Open []struct{ ID, Kind, Reason string }
	}
	for pending == "" && sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "event: ") {
			typ = l[7:]
		}
		if !strings.HasPrefix(l, "data: ") {
			continue
		}
		// The stream opens with a snapshot: an approval that opened
		// before the test subscribed (a loaded machine) is there, not in
		// a task event.
		var sums []summary
		switch typ {
		case "task":
			var sum summary
			json.Unmarshal([]byte(l[6:]), &sum)
			sums = append(sums, sum)
		case "snapshot":
			var snap struct{ Tasks []summary }
			json.Unmarshal([]byte(l[6:]), &snap)
			sums = snap.Tasks
		}
		for _, sum := range sums {
			if len(sum.Open) == 1 && sum.Open[0].Kind == "approval" && sum.Open[0].Reason == "creates approved.txt" {
				task, pending = sum.ID, sum.Open[0].ID
			}
		}
	}
	if pending == "" {
		t.Fatalf("no approval waited in the console: %v", sc.Err())
	}
	if _, err := os.Stat(filepath.Join(dir, "approved.txt")); err == nil {
		t.Fatal("the command ran before its approval")
	}
	select {
	case l := <-announced:
		if !strings.Contains(l, "creates approved.txt") || !strings.Contains(l, url+"#/tasks/"+task) {
			t.Errorf("the terminal's line for the waiting approval: %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the terminal printed nothing while the approval waited")
	}
	req, _ = http.NewRequest("POST", url+"api/tasks/"+task+"/pending/"+pending, strings.NewReader(`{"approve":true}`))
	req.Header.Set("X-CSRF-Token", sess.CSRF)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("approve: %v %v", resp, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("saucer run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("saucer run did not end")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "approved.txt")); string(b) != "ok\n" {
		t.Errorf("approved.txt = %q", b)
	}
}

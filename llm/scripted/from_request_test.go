package scripted_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
)

// TestFromRequest: an argument taken from the request is the group of the
// latest message that matches, a number when it reads as one; a request
// with no match fails the call and says what was looked for.
func TestFromRequest(t *testing.T) {
	s, err := scripted.Parse([]byte(`
replies:
  - tool_calls:
      - name: click
        arguments: {button: left}
        from_request: {id: '\[(\d+)\] push button "7"', label: 'title=(\w+)'}
  - tool_calls:
      - name: click
        from_request: {id: '\[(\d+)\] push button "8"'}
`), "yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(*s)
	req := &llm.Request{Messages: []llm.Message{
		llm.User(`title=Old [3] push button "7"`),
		llm.User("title=Calculator\n[12] push button \"7\"\n[13] push button \"8\""),
	}}
	resp, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Message.ToolCalls[0].Arguments; got != `{"button":"left","id":12,"label":"Calculator"}` {
		t.Errorf("arguments %s", got)
	}
	_, err = m.Complete(context.Background(), &llm.Request{Messages: []llm.Message{llm.User(`[13] push button "9"`)}})
	var fe *scripted.FromRequestError
	if !errors.As(err, &fe) || fe.Call != 2 || !strings.Contains(err.Error(), `push button \"8\"`) {
		t.Errorf("a request without the control: %v", err)
	}
	for _, bad := range []string{`{id: '\d+'}`, `{id: '('}`} {
		_, err := scripted.Parse([]byte("replies: [{tool_calls: [{name: click, from_request: "+bad+"}]}]"), "yaml")
		if err == nil {
			t.Errorf("from_request %s was accepted", bad)
		}
	}
}

package scripted_test

import (
	"context"
	"fmt"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/llm/scripted"
)

func Example() {
	script, err := scripted.Parse([]byte(`
replies:
  - expect: "hosts"
    text: "Reading it."
    tool_calls:
      - name: read_file
        arguments: {path: /etc/hosts}
  - json: {status: FINISH, result: "read"}
`), "yaml")
	if err != nil {
		panic(err)
	}
	model := scripted.New(*script)
	req := &llm.Request{Messages: []llm.Message{llm.User("show /etc/hosts")}}
	for range 3 {
		resp, err := model.Complete(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(resp.Message.Content, resp.Message.ToolCalls, resp.FinishReason)
	}
	fmt.Println(len(model.Calls()), "requests recorded")
	// Output:
	// Reading it. [{call_1_1 read_file {"path":"/etc/hosts"}}] tool_calls
	// {"status":"FINISH","result":"read"} [] stop
	// scripted: the script has 2 replies and call 3 has none (add replies, or set loop: true)
	// 3 requests recorded
}

package agentbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/saucerhq/saucer/llm"
	"github.com/saucerhq/saucer/prompts"
)

// Solution is a model that plays an example solution: as the host agent it
// gives the task to the shell app, then passes the app's answer on; as the
// shell app it runs the example, then answers with the command's output,
// trimmed. It reads only its requests, so it is deterministic.
type Solution struct {
	Example string
}

var _ llm.Model = Solution{}

// Open returns the solution model a suite names (ModelPrefix + case id),
// reading examples/<id>.sh next to the suite file. ok is false for other
// specs.
func Open(spec, suiteFile string) (m llm.Model, ok bool, err error) {
	id, found := strings.CutPrefix(spec, ModelPrefix)
	if !found {
		return nil, false, nil
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(suiteFile), "examples", id+".sh"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, fmt.Errorf("agentbench: task %s has no example solution to play (examples/%s.sh); give --model to run it with a model", id, id)
	}
	if err != nil {
		return nil, true, fmt.Errorf("agentbench: the example solution of %s: %w", id, err)
	}
	return Solution{Example: string(b)}, true, nil
}

// Complete plays the next move.
func (s Solution) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host := false
	for _, t := range req.Tools {
		if t.Name == prompts.AssignTool {
			host = true
		}
	}
	var last *llm.Message // the latest tool result
	for i := range req.Messages {
		if req.Messages[i].Role == llm.RoleTool {
			last = &req.Messages[i]
		}
	}
	var call llm.ToolCall
	switch {
	case host && last == nil:
		call = tool(prompts.AssignTool, map[string]any{"app": "shell", "subtask": "Run the example solution and report its output."})
	case host:
		var note struct {
			Result string `json:"result"`
		}
		json.Unmarshal([]byte(last.Content), &note)
		call = tool(prompts.FinishTool, map[string]any{"result": note.Result})
	case last == nil:
		call = tool("execute_command", map[string]any{"command": s.Example})
	default:
		var out struct {
			Stdout string `json:"stdout"`
		}
		answer := last.Content
		if json.Unmarshal([]byte(last.Content), &out) == nil {
			answer = out.Stdout
		}
		call = tool(prompts.FinishTool, map[string]any{"result": strings.TrimSpace(answer)})
	}
	call.ID = fmt.Sprintf("solution_%d", len(req.Messages))
	return &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, FinishReason: "tool_calls", Model: "agentbench-example"}, nil
}

// Stream is Complete.
func (s Solution) Stream(ctx context.Context, req *llm.Request, _ func(llm.Chunk)) (*llm.Response, error) {
	return s.Complete(ctx, req)
}

func tool(name string, args map[string]any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Arguments: string(b)}
}

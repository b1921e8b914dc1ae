package openai

import (
	"reflect"
	"runtime"
	"testing"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/saucerhq/saucer/llm"
)

func intp(i int) *int { return &i }

func frag(index *int, id, name, args string) goopenai.ToolCall {
	return goopenai.ToolCall{Index: index, ID: id, Type: goopenai.ToolTypeFunction, Function: goopenai.FunctionCall{Name: name, Arguments: args}}
}

// TestAccumulatorWithoutIDs covers servers that send neither index nor id,
// where only the names tell parallel calls apart.
func TestAccumulatorWithoutIDs(t *testing.T) {
	tests := []struct {
		name  string
		frags []goopenai.ToolCall
		want  []llm.ToolCall
	}{
		{
			name:  "two different tools",
			frags: []goopenai.ToolCall{frag(nil, "", "read", `{"path":`), frag(nil, "", "", `"a"}`), frag(nil, "", "write", `{}`)},
			want:  []llm.ToolCall{{Name: "read", Arguments: `{"path":"a"}`}, {Name: "write", Arguments: `{}`}},
		},
		{
			name:  "same tool twice, whole calls",
			frags: []goopenai.ToolCall{frag(nil, "", "read", `{"path":"a"}`), frag(nil, "", "read", `{"path":"b"}`)},
			want:  []llm.ToolCall{{Name: "read", Arguments: `{"path":"a"}`}, {Name: "read", Arguments: `{"path":"b"}`}},
		},
		{
			name:  "name repeated in every fragment",
			frags: []goopenai.ToolCall{frag(intp(0), "", "read", `{"pa`), frag(intp(0), "", "read", `th":"a"}`)},
			want:  []llm.ToolCall{{Name: "read", Arguments: `{"path":"a"}`}},
		},
		{
			name:  "id arrives in the first fragment only",
			frags: []goopenai.ToolCall{frag(intp(0), "call_1", "read", ``), frag(intp(0), "", "", `{"path":"a"}`), frag(intp(1), "call_2", "read", `{}`)},
			want:  []llm.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path":"a"}`}, {ID: "call_2", Name: "read", Arguments: `{}`}},
		},
		{
			name:  "interleaved indexes",
			frags: []goopenai.ToolCall{frag(intp(0), "a", "x", `{"n"`), frag(intp(1), "b", "y", `{"m"`), frag(intp(0), "", "", `:1}`), frag(intp(1), "", "", `:2}`)},
			want:  []llm.ToolCall{{ID: "a", Name: "x", Arguments: `{"n":1}`}, {ID: "b", Name: "y", Arguments: `{"m":2}`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a accumulator
			for _, f := range tt.frags {
				a.add(goopenai.ChatCompletionStreamResponse{Choices: []goopenai.ChatCompletionStreamChoice{{Delta: goopenai.ChatCompletionStreamChoiceDelta{ToolCalls: []goopenai.ToolCall{f}}}}}, nil)
			}
			if got := a.response().Message.ToolCalls; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIsReasoningModel(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o1-mini": true, "o3-mini": true, "o4-mini": true, "gpt-5": true, "gpt-5-mini": true,
		"gpt-4o": false, "gpt-4.1": false, "qwen2.5": false, "llama3": false,
	} {
		if got := isReasoningModel(model); got != want {
			t.Errorf("isReasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

// TestAccumulatorIsLinear counts, rather than times, what accumulating a
// streamed call costs: four times the fragments must allocate about four
// times the bytes. Appending each fragment to the arguments so far as a
// new string allocates sixteen times.
func TestAccumulatorIsLinear(t *testing.T) {
	feed := func(frags int) uint64 {
		var before, after runtime.MemStats
		var a accumulator
		chunk := func(tc goopenai.ToolCall) goopenai.ChatCompletionStreamResponse {
			return goopenai.ChatCompletionStreamResponse{Choices: []goopenai.ChatCompletionStreamChoice{{Delta: goopenai.ChatCompletionStreamChoiceDelta{Content: "ab", ToolCalls: []goopenai.ToolCall{tc}}}}}
		}
		runtime.ReadMemStats(&before)
		a.add(chunk(frag(intp(0), "call_1", "write_file", `{"content":"`)), nil)
		for range frags {
			a.add(chunk(frag(intp(0), "", "", "0123456789abcdef")), nil)
		}
		a.add(chunk(frag(intp(0), "", "", `"}`)), nil)
		resp := a.response()
		runtime.ReadMemStats(&after)
		if n := len(resp.Message.ToolCalls[0].Arguments); n != 16*frags+14 {
			t.Fatalf("arguments of %d bytes, want %d", n, 16*frags+14)
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, big := feed(4096), feed(4*4096)
	if ratio := float64(big) / float64(small); ratio > 6 {
		t.Errorf("4096 fragments allocated %d bytes, 16384 allocated %d (%.1f×): more than linear", small, big, ratio)
	}
}

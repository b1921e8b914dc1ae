package aip_test

import (
	"testing"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
)

var benchFrame = &aip.ServerMessage{Type: aip.TypeCommand, Status: aip.StatusContinue, SessionID: "00000000-0000-4000-8000-000000000009",
	TaskName: "bench", ResponseID: "00000000-0000-4000-8000-000000000013", Timestamp: "2025-01-01T00:00:00.000000+00:00",
	Actions: []command.Command{{ToolName: "click_input", ToolType: command.Action, CallID: "00000000-0000-4000-8000-000000000011",
		Parameters: map[string]any{"id": "12", "button": "left"}}}, Lifecycle: &aip.Lifecycle{QueuedBy: "api-key:abcd"}}

// BenchmarkEncodeCommand and BenchmarkDecodeCommand measure one command
// frame through the codec.
func BenchmarkEncodeCommand(b *testing.B) {
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = benchFrame.Append(buf[:0])
	}
	b.SetBytes(int64(len(buf)))
}

func BenchmarkDecodeCommand(b *testing.B) {
	frame, _ := benchFrame.Append(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := aip.DecodeServer(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeResults(b *testing.B) {
	m := &aip.ClientMessage{Type: aip.TypeCommandResults, Status: aip.StatusContinue, ClientID: "bench",
		SessionID: "00000000-0000-4000-8000-000000000009", PrevResponseID: "00000000-0000-4000-8000-000000000013",
		RequestID: "00000000-0000-4000-8000-000000000015", Timestamp: "2025-01-01T00:00:00.000000+00:00",
		ActionResults: []command.Result{{Status: command.Success, Result: []byte(`{"clicked":true}`), CallID: "00000000-0000-4000-8000-000000000011"}}}
	frame, _ := m.Append(nil)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := aip.DecodeClient(frame); err != nil {
			b.Fatal(err)
		}
	}
}

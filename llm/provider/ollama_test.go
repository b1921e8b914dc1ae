package provider

import "testing"

func TestOllamaBaseURL(t *testing.T) {
	tests := map[string]string{
		"http://localhost:11434":     "http://localhost:11434/v1",
		"http://localhost:11434/":    "http://localhost:11434/v1",
		"http://localhost:11434/v1":  "http://localhost:11434/v1",
		"127.0.0.1:11500":            "http://127.0.0.1:11500/v1",
		"0.0.0.0":                    "http://0.0.0.0:11434/v1",
		"gpu-box":                    "http://gpu-box:11434/v1",
		"https://ollama.example.com": "https://ollama.example.com/v1",
		"http://proxy:8080/ollama":   "http://proxy:8080/ollama/v1",
		"[::1]:11434":                "http://[::1]:11434/v1",
	}
	for in, want := range tests {
		got, err := ollamaBaseURL(in)
		if err != nil || got != want {
			t.Errorf("ollamaBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"http://", "http://[::1"} {
		if got, err := ollamaBaseURL(bad); err == nil {
			t.Errorf("ollamaBaseURL(%q) = %q, want an error", bad, got)
		}
	}
}

package cassette

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRecordings(t *testing.T) {
	want := map[string]int{ // exchanges per recording
		"TestConversationalWithMemory.httprr":               1,
		"TestExecutorWithMRKLAgent.httprr":                  2,
		"TestExecutorWithOpenAIFunctionAgent.httprr":        3,
		"TestOpenAIFunctionsAgentComplexCalculation.httprr": 1,
		"TestOpenAIFunctionsAgentWithHTTPRR.httprr":         2,
	}
	for name, n := range want {
		exs, err := Load(filepath.Join("../../../../testdata/provider-cassettes", name))
		if err != nil {
			t.Fatal(err)
		}
		if len(exs) != n {
			t.Errorf("%s: %d exchanges, want %d", name, len(exs), n)
		}
		for i, ex := range exs {
			if ex.Status != 200 || len(ex.ResponseBody) == 0 {
				t.Errorf("%s #%d: status %d, %d body bytes", name, i+1, ex.Status, len(ex.ResponseBody))
			}
			if ex.Path == "/v1/chat/completions" {
				if ex.Method != http.MethodPost || !json.Valid(ex.RequestBody) || !json.Valid(ex.ResponseBody) {
					t.Errorf("%s #%d: %s with request JSON %v, response JSON %v", name, i+1, ex.Method, json.Valid(ex.RequestBody), json.Valid(ex.ResponseBody))
				}
			}
		}
	}
}

func TestLoadRejectsDamage(t *testing.T) {
	req := "POST http://x/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	resp := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
	good := "httprr trace v1\n" + itoa(len(req)) + " " + itoa(len(resp)) + "\n" + req + resp
	tests := map[string]string{
		"wrong header":    strings.Replace(good, "v1", "v2", 1),
		"bad length line": strings.Replace(good, itoa(len(req))+" ", "x ", 1),
		"truncated":       good[:len(good)-1],
		"not HTTP":        "httprr trace v1\n3 3\nabcdef",
	}
	dir := t.TempDir()
	ok := filepath.Join(dir, "good.httprr")
	if err := os.WriteFile(ok, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	exs, err := Load(ok)
	if err != nil || len(exs) != 1 || string(exs[0].RequestBody) != "{}" {
		t.Fatalf("good trace: %v, %+v", err, exs)
	}
	for name, content := range tests {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p); err == nil {
			t.Errorf("%s: Load succeeded, want an error", name)
		}
	}
}

func TestServeReplaysInOrder(t *testing.T) {
	exs := []Exchange{
		{Method: "POST", Path: "/a", Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(`{"n":1}`)},
		{Method: "POST", Path: "/a", Status: 429, Header: http.Header{"Retry-After": {"3"}}, ResponseBody: []byte(`{"n":2}`)},
	}
	srv := Serve(t, exs)
	for i, ex := range exs {
		resp, err := http.Post(srv.URL+"/a", "application/json", strings.NewReader(`{"i":`+itoa(i)+`}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != ex.Status || string(body) != string(ex.ResponseBody) {
			t.Errorf("reply %d: %d %s, want %d %s", i+1, resp.StatusCode, body, ex.Status, ex.ResponseBody)
		}
		for k := range ex.Header {
			if resp.Header.Get(k) != ex.Header.Get(k) {
				t.Errorf("reply %d: header %s = %q, want %q", i+1, k, resp.Header.Get(k), ex.Header.Get(k))
			}
		}
	}
	got := srv.Received()
	if len(got) != 2 || string(got[0]) != `{"i":0}` || string(got[1]) != `{"i":1}` {
		t.Errorf("received %q", got)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

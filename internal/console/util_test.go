package console_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
)

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

type recorder struct {
	code   int
	header http.Header
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{code: 200, header: http.Header{}} }

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(c int)           { r.code = c }

func httpGet(path string) *http.Request { return httptest.NewRequest("GET", path, nil) }

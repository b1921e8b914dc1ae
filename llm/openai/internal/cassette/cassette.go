// Package cassette reads recorded HTTP traffic in the "httprr trace v1"
// format and serves it back from a local test server, so provider tests run
// against real responses without a network.
//
// The format is a line "httprr trace v1", then for each exchange a line
// "REQLEN RESPLEN" followed by exactly REQLEN bytes of raw HTTP request and
// RESPLEN bytes of raw HTTP response.
package cassette

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const header = "httprr trace v1\n"

// Exchange is one recorded request and its response.
type Exchange struct {
	Method, Path string
	RequestBody  []byte
	Status       int
	Header       http.Header
	ResponseBody []byte
}

// Load reads every exchange of the cassette at path.
func Load(path string) ([]Exchange, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(data, []byte(header)) {
		return nil, fmt.Errorf("%s: not an httprr v1 trace (first line must be %q)", path, strings.TrimSpace(header))
	}
	data = data[len(header):]
	var out []Exchange
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			return nil, fmt.Errorf("%s: exchange %d: missing length line", path, len(out)+1)
		}
		reqLen, respLen, err := parseLengths(string(data[:nl]))
		if err != nil {
			return nil, fmt.Errorf("%s: exchange %d: %w", path, len(out)+1, err)
		}
		data = data[nl+1:]
		if reqLen+respLen > len(data) {
			return nil, fmt.Errorf("%s: exchange %d: lengths %d+%d run past the end of the file", path, len(out)+1, reqLen, respLen)
		}
		ex, err := parseExchange(data[:reqLen], data[reqLen:reqLen+respLen])
		if err != nil {
			return nil, fmt.Errorf("%s: exchange %d: %w", path, len(out)+1, err)
		}
		out = append(out, ex)
		data = data[reqLen+respLen:]
	}
	return out, nil
}

func parseLengths(line string) (int, int, error) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("length line %q: want \"REQLEN RESPLEN\"", line)
	}
	a, err1 := strconv.Atoi(f[0])
	b, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || a < 0 || b < 0 {
		return 0, 0, fmt.Errorf("length line %q: want two non-negative numbers", line)
	}
	return a, b, nil
}

func parseExchange(rawReq, rawResp []byte) (Exchange, error) {
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(rawReq)))
	if err != nil {
		return Exchange{}, fmt.Errorf("request: %w", err)
	}
	reqBody, err := io.ReadAll(req.Body)
	if err != nil {
		return Exchange{}, fmt.Errorf("request body: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(rawResp)), req)
	if err != nil {
		return Exchange{}, fmt.Errorf("response: %w", err)
	}
	respBody, err := io.ReadAll(resp.Body)
	if err != nil {
		return Exchange{}, fmt.Errorf("response body: %w", err)
	}
	return Exchange{
		Method:       req.Method,
		Path:         req.URL.Path,
		RequestBody:  reqBody,
		Status:       resp.StatusCode,
		Header:       resp.Header,
		ResponseBody: respBody,
	}, nil
}

// Server serves recorded exchanges in order and remembers what it was sent.
type Server struct {
	*httptest.Server

	t         testing.TB
	mu        sync.Mutex
	exchanges []Exchange
	received  [][]byte
}

// Serve starts a server that answers the i-th request with the i-th
// exchange's response, after checking that method and path match the
// recording. A request past the end, or one that does not match, fails t.
// The server is closed when the test ends.
func Serve(t testing.TB, exchanges []Exchange) *Server {
	t.Helper()
	s := &Server{t: t, exchanges: exchanges}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	t.Cleanup(s.Close)
	return s
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.t.Errorf("cassette: reading request body: %v", err)
	}
	s.mu.Lock()
	i := len(s.received)
	s.received = append(s.received, body)
	s.mu.Unlock()

	if i >= len(s.exchanges) {
		s.t.Errorf("cassette: request %d (%s %s) but only %d were recorded", i+1, r.Method, r.URL.Path, len(s.exchanges))
		http.Error(w, "no recorded exchange left", http.StatusInternalServerError)
		return
	}
	ex := s.exchanges[i]
	if r.Method != ex.Method || r.URL.Path != ex.Path {
		s.t.Errorf("cassette: request %d is %s %s, recorded %s %s", i+1, r.Method, r.URL.Path, ex.Method, ex.Path)
		http.Error(w, "request does not match the recording", http.StatusBadRequest)
		return
	}
	for k, vs := range ex.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue // describe the recorded framing, not ours
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(ex.Status)
	_, _ = w.Write(ex.ResponseBody)
}

// Received returns the request bodies the server has been sent, in order.
func (s *Server) Received() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.received...)
}

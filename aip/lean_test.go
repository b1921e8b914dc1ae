package aip

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An accepted connection holds no read or write buffer between frames,
// whatever their size (a large frame's payload is written straight
// through), and its frames arrive whole, each way.
func TestAcceptedConnHoldsNoBufferWhileIdle(t *testing.T) {
	idle := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, ConnOptions{PingInterval: -1})
		if err != nil {
			t.Errorf("accept: %v", err)
			return
		}
		defer c.CloseNow()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c.Bind(ctx)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.SendRaw(ctx, b); err != nil {
				t.Errorf("echo: %v", err)
				return
			}
			// The peer waits for the echo before sending more: nothing
			// is in flight now.
			switch {
			case c.lean == nil:
				idle <- "the accepted connection keeps net/http's buffers (no leanConn)"
			case c.lean.in != nil || c.lean.out != nil:
				idle <- fmt.Sprintf("between frames the connection holds a read buffer (%v) or a write buffer (%v)", c.lean.in != nil, c.lean.out != nil)
			case c.lean.br.Size() != leanBufSize:
				idle <- fmt.Sprintf("coder/websocket reads through a %d-byte buffer", c.lean.br.Size())
			default:
				idle <- ""
			}
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c, _, err := Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	for _, size := range []int{1, 14, 125, 126, 300, 4095, 4096, 70_000, directAbove + 1, 300_000} {
		frame := bytes.Repeat([]byte{'a' + byte(size%26)}, size)
		if err := c.SendRaw(ctx, frame); err != nil {
			t.Fatal(err)
		}
		_, echo, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("frame of %d bytes: %v", size, err)
		}
		if !bytes.Equal(echo, frame) {
			t.Fatalf("frame of %d bytes came back as %d bytes", size, len(echo))
		}
		if msg := <-idle; msg != "" {
			t.Fatalf("after a frame of %d bytes: %s", size, msg)
		}
	}
}

// frameSize reads the three forms of a frame's length (RFC 6455 5.2),
// masked or not, and waits for a whole header.
func TestFrameSize(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		size int
		ok   bool
	}{
		{[]byte{0x81}, 0, false},
		{[]byte{0x81, 5}, 7, true},
		{[]byte{0x81, 0x85, 1, 2}, 0, false}, // masked: the key is part of the header
		{[]byte{0x81, 0x85, 1, 2, 3, 4}, 11, true},
		{[]byte{0x81, 126, 1}, 0, false},
		{[]byte{0x81, 126, 1, 0}, 4 + 256, true},
		{[]byte{0x82, 127, 0, 0, 0, 0, 0, 1, 0, 0}, 10 + 65536, true},
	} {
		size, ok := frameSize(tc.b)
		if size != tc.size || ok != tc.ok {
			t.Errorf("frameSize(% x) = %d, %v; want %d, %v", tc.b, size, ok, tc.size, tc.ok)
		}
	}
}

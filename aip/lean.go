package aip

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"syscall"
)

// An accepted connection hands coder/websocket buffers that hold memory
// only while a frame is in flight. coder/websocket keeps the bufio reader
// and writer it is given for the connection's whole life (net/http's
// hijacked 4 KiB pair: 8 KiB a device, 80 MiB for 10,000 idle ones) and
// has no option to size or release them. So Accept hijacks the
// connection itself and gives coder/websocket the smallest bufio pair
// (16 bytes each) over a leanConn, which reads and writes through pooled
// buffers: an idle connection waits for data holding none, and a frame
// still goes out in one write.

// leanBufSize is the size of the bufio reader and writer coder/websocket
// is given: bufio's least.
const leanBufSize = 16

// readChunk is how much a leanConn reads at a time into a pooled buffer.
// A read at least this large goes straight into the caller's buffer.
const readChunk = 4096

// directAbove is the frame size above which a leanConn writes a frame's
// payload straight from coder/websocket's buffer (a screenshot's frame)
// rather than gathering the frame to write it at once.
const directAbove = 64 << 10

// leanHijacker is a ResponseWriter whose Hijack returns a leanConn (and
// keeps it in conn).
type leanHijacker struct {
	http.ResponseWriter
	conn *leanConn
}

func (h *leanHijacker) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (h *leanHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// A connection that cannot be waited on without a read (TLS) keeps
	// net/http's buffers.
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return conn, brw, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return conn, brw, nil
	}
	if brw.Writer.Buffered() > 0 {
		if err := brw.Writer.Flush(); err != nil {
			return nil, nil, err
		}
	}
	lc := &leanConn{Conn: conn, raw: raw}
	if n := brw.Reader.Buffered(); n > 0 { // the client did not wait for the handshake's answer
		b, _ := brw.Reader.Peek(n)
		lc.prefix = bytes.Clone(b)
	}
	lc.br = bufio.NewReaderSize(lc, leanBufSize)
	h.conn = lc
	return lc, bufio.NewReadWriter(lc.br, bufio.NewWriterSize(lc, leanBufSize)), nil
}

// leanConn is a server's WebSocket connection as coder/websocket reads and
// writes it. One goroutine reads and one writes at a time (coder/websocket
// locks each side), so each side's fields need no lock.
type leanConn struct {
	net.Conn
	raw syscall.RawConn

	// Read side: br is the bufio reader coder/websocket reads through;
	// prefix is what net/http read past the handshake; in holds bytes
	// read and not yet taken (from off), nil while there are none.
	br     *bufio.Reader
	prefix []byte
	in     *[]byte
	off    int

	// Write side: out gathers the frame being written, nil between frames;
	// direct counts the bytes of a large frame still to pass straight
	// through.
	out    *[]byte
	direct int
}

// Read serves what is buffered, else reads: a large read straight into
// p, a small one (coder/websocket's frame headers, through its 16-byte
// reader) into a pooled buffer taken once data is there.
func (c *leanConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	if c.in == nil {
		if len(p) >= readChunk {
			return c.Conn.Read(p)
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*c.in)[c.off:])
	c.off += n
	if c.off == len(*c.in) {
		putBuffer(c.in)
		c.in, c.off = nil, 0
	}
	return n, nil
}

// fill waits until the socket has data, holding no buffer, then reads up
// to readChunk bytes into a pooled one.
func (c *leanConn) fill() error {
	var buf *[]byte
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		buf = getBuffer()
		if cap(*buf) < readChunk {
			*buf = make([]byte, readChunk)
		}
		*buf = (*buf)[:readChunk]
		for {
			n, rerr = syscall.Read(int(fd), *buf)
			if rerr != syscall.EINTR {
				break
			}
		}
		if rerr == syscall.EAGAIN {
			putBuffer(buf)
			buf = nil
			return false // wait until the socket is readable
		}
		return true
	})
	if err != nil || rerr != nil || n <= 0 {
		if buf != nil {
			putBuffer(buf)
		}
		switch {
		case err != nil:
			return err
		case rerr != nil:
			return &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: rerr}
		}
		return io.EOF
	}
	*buf = (*buf)[:n]
	c.in, c.off = buf, 0
	return nil
}

// Write gathers each WebSocket frame until it is whole and writes it with
// one write (coder/websocket hands it over in pieces through its 16-byte
// writer); a frame larger than directAbove has its payload written as it
// comes.
func (c *leanConn) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		if c.direct > 0 {
			k := min(len(p), c.direct)
			if _, err := c.Conn.Write(p[:k]); err != nil {
				return 0, err
			}
			c.direct -= k
			p = p[k:]
			continue
		}
		if c.out == nil {
			c.out = getBuffer()
			*c.out = (*c.out)[:0]
		}
		pend := *c.out
		size, known := frameSize(pend)
		if !known {
			// Take the frame's header first: its length says what follows.
			need := 2
			if len(pend) >= 2 {
				need = frameHeaderLen(pend)
			}
			take := min(len(p), need-len(pend))
			*c.out = append(pend, p[:take]...)
			p = p[take:]
			continue
		}
		if size > directAbove {
			c.direct = size - len(pend)
			err := c.flushOut(pend)
			if err != nil {
				return 0, err
			}
			continue
		}
		take := min(len(p), size-len(pend))
		pend = append(pend, p[:take]...)
		*c.out = pend
		p = p[take:]
		if len(pend) == size {
			if err := c.flushOut(pend); err != nil {
				return 0, err
			}
		}
	}
	return written, nil
}

// flushOut writes b, the gathered bytes, and gives their buffer back.
func (c *leanConn) flushOut(b []byte) error {
	_, err := c.Conn.Write(b)
	putBuffer(c.out)
	c.out = nil
	return err
}

// frameHeaderLen is the length of the WebSocket frame header that b (at
// least 2 bytes) begins (RFC 6455 section 5.2).
func frameHeaderLen(b []byte) int {
	n := 2
	switch b[1] & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b[1]&0x80 != 0 {
		n += 4 // masking key
	}
	return n
}

// frameSize is the whole length of the frame b begins, once b holds its
// header.
func frameSize(b []byte) (int, bool) {
	if len(b) < 2 || len(b) < frameHeaderLen(b) {
		return 0, false
	}
	var payload uint64
	switch l := b[1] & 0x7f; l {
	case 126:
		payload = uint64(b[2])<<8 | uint64(b[3])
	case 127:
		for _, x := range b[2:10] {
			payload = payload<<8 | uint64(x)
		}
	default:
		payload = uint64(l)
	}
	// No frame is that large; the cap keeps the sum an int, and a frame
	// above directAbove passes through whatever its size.
	payload = min(payload, 1<<40)
	return frameHeaderLen(b) + int(payload), true
}

// Package wl is a small Wayland client: the wire protocol (messages on a
// unix socket, file descriptors beside them) and the few interfaces Saucer
// needs to see and drive a wlroots compositor's screen: wl_shm buffers,
// outputs and seats, wlr-screencopy for pixels, and the virtual pointer
// and keyboard protocols for input. It speaks the protocol itself (no
// libwayland, no cgo), like the X11 backend speaks X through xgb.
package wl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Conn is a connection to a compositor. Requests may be sent from any
// goroutine; events are read by Roundtrip and Wait, one caller at a time.
type Conn struct {
	sock *net.UnixConn
	path string

	wmu    sync.Mutex // one message at a time
	nextID uint32
	// handlers get the events of each object, by id.
	hmu      sync.Mutex
	handlers map[uint32]func(op uint16, args []byte, fds []int)
	fatal    error
	in       []byte
	inFDs    []int
	globals  []Global
	registry uint32
}

// Global is an interface the compositor offers.
type Global struct {
	Name      uint32
	Interface string
	Version   uint32
}

// Dial connects to the compositor at the socket path or display name
// (resolved in XDG_RUNTIME_DIR) and reads its globals.
func Dial(display string) (*Conn, error) {
	path := display
	if !filepath.IsAbs(path) {
		dir := os.Getenv("XDG_RUNTIME_DIR")
		if dir == "" {
			return nil, fmt.Errorf("Wayland display %q is a name and XDG_RUNTIME_DIR is not set: give the socket's path", display)
		}
		path = filepath.Join(dir, display)
	}
	sock, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("connect to the Wayland compositor at %s: %w", path, err)
	}
	c := &Conn{sock: sock, path: path, nextID: 2, handlers: map[uint32]func(uint16, []byte, []int){}}
	c.handlers[1] = c.displayEvent
	c.registry = c.NewID(func(op uint16, a []byte, _ []int) {
		switch op {
		case 0: // global(name, interface, version)
			r := reader{b: a}
			g := Global{Name: r.uint(), Interface: r.string()}
			g.Version = r.uint()
			c.globals = append(c.globals, g)
		case 1: // global_remove(name)
			r := reader{b: a}
			name := r.uint()
			for i, g := range c.globals {
				if g.Name == name {
					c.globals = append(c.globals[:i], c.globals[i+1:]...)
					break
				}
			}
		}
	})
	if err := c.Request(1, 1, Uint(c.registry)); err != nil { // wl_display.get_registry
		sock.Close()
		return nil, err
	}
	if err := c.Roundtrip(5 * time.Second); err != nil {
		sock.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the connection; the compositor destroys its objects.
func (c *Conn) Close() error { return c.sock.Close() }

// Path is the socket's path.
func (c *Conn) Path() string { return c.path }

// Globals are the interfaces the compositor offers.
func (c *Conn) Globals() []Global { return c.globals }

// Find returns the first global of an interface.
func (c *Conn) Find(iface string) (Global, bool) {
	for _, g := range c.globals {
		if g.Interface == iface {
			return g, true
		}
	}
	return Global{}, false
}

// Bind binds a global at version (at most what it offers) to a new object
// whose events go to h.
func (c *Conn) Bind(g Global, version uint32, h func(op uint16, args []byte, fds []int)) (id, bound uint32, err error) {
	bound = min(version, g.Version)
	id = c.NewID(h)
	err = c.Request(c.registry, 0, Uint(g.Name), String(g.Interface), Uint(bound), Uint(id))
	return id, bound, err
}

// NewID allocates an object id whose events go to h (nil: ignored).
func (c *Conn) NewID(h func(op uint16, args []byte, fds []int)) uint32 {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	id := c.nextID
	c.nextID++
	if h == nil {
		h = func(uint16, []byte, []int) {}
	}
	c.handlers[id] = h
	return id
}

// Forget drops an object's handler (after its destructor).
func (c *Conn) Forget(id uint32) {
	c.hmu.Lock()
	delete(c.handlers, id)
	c.hmu.Unlock()
}

func (c *Conn) displayEvent(op uint16, a []byte, _ []int) {
	r := reader{b: a}
	switch op {
	case 0: // error(object_id, code, message)
		obj, code := r.uint(), r.uint()
		c.fatal = fmt.Errorf("the Wayland compositor refused a request on object %d (error %d): %s", obj, code, r.string())
	case 1: // delete_id(id)
		c.Forget(r.uint())
	}
}

// Arg is one argument of a request.
type Arg struct {
	b  []byte
	fd int
}

// Uint is a uint, an object or a new_id argument.
func Uint(v uint32) Arg { return Arg{b: binary.LittleEndian.AppendUint32(nil, v), fd: -1} }

// Int is an int argument.
func Int(v int32) Arg { return Uint(uint32(v)) }

// Fixed is a fixed-point (24.8) argument.
func Fixed(v float64) Arg { return Int(int32(math.Round(v * 256))) }

// String is a string argument.
func String(s string) Arg {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(s)+1))
	b = append(b, s...)
	b = append(b, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return Arg{b: b, fd: -1}
}

// FD is a file descriptor argument: it travels beside the message.
func FD(fd int) Arg { return Arg{fd: fd} }

// Request sends request op to object id.
func (c *Conn) Request(id uint32, op uint16, args ...Arg) error {
	size := 8
	var fds []int
	for _, a := range args {
		size += len(a.b)
		if a.fd >= 0 && a.b == nil {
			fds = append(fds, a.fd)
		}
	}
	msg := make([]byte, 8, size)
	binary.LittleEndian.PutUint32(msg, id)
	binary.LittleEndian.PutUint32(msg[4:], uint32(size)<<16|uint32(op))
	for _, a := range args {
		msg = append(msg, a.b...)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_ = c.sock.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := c.sock.WriteMsgUnix(msg, oob, nil); err != nil {
		return fmt.Errorf("send to the Wayland compositor: %w", err)
	}
	return nil
}

// Roundtrip sends wl_display.sync and dispatches events until its done
// event: every request sent before has been handled.
func (c *Conn) Roundtrip(timeout time.Duration) error {
	done := false
	cb := c.NewID(func(uint16, []byte, []int) { done = true })
	if err := c.Request(1, 0, Uint(cb)); err != nil {
		return err
	}
	return c.Wait(timeout, func() bool { return done })
}

// Wait dispatches events until cond holds, the compositor reports an
// error, or the timeout passes.
func (c *Conn) Wait(timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if c.fatal != nil {
			return c.fatal
		}
		if cond() {
			return nil
		}
		if err := c.dispatch(deadline); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("the Wayland compositor at %s did not answer within %s", c.path, timeout)
			}
			return err
		}
	}
}

// dispatch reads from the socket and handles every whole event read.
func (c *Conn) dispatch(deadline time.Time) error {
	buf := make([]byte, 65536)
	oob := make([]byte, syscall.CmsgSpace(28*4))
	_ = c.sock.SetReadDeadline(deadline)
	n, oobn, _, _, err := c.sock.ReadMsgUnix(buf, oob)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("the Wayland compositor at %s closed the connection", c.path)
	}
	c.in = append(c.in, buf[:n]...)
	if oobn > 0 {
		msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
		if err == nil {
			for _, m := range msgs {
				if fds, err := syscall.ParseUnixRights(&m); err == nil {
					c.inFDs = append(c.inFDs, fds...)
				}
			}
		}
	}
	for len(c.in) >= 8 {
		id := binary.LittleEndian.Uint32(c.in)
		word := binary.LittleEndian.Uint32(c.in[4:])
		size, op := int(word>>16), uint16(word)
		if size < 8 || len(c.in) < size {
			break
		}
		args := c.in[8:size]
		c.hmu.Lock()
		h := c.handlers[id]
		c.hmu.Unlock()
		// Events that carry descriptors take them in order; Saucer's
		// handlers take none (wl_keyboard's keymap is never asked for),
		// so any that arrive are closed.
		fds := c.inFDs
		c.inFDs = nil
		if h != nil {
			h(op, args, fds)
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
		c.in = c.in[size:]
	}
	return nil
}

// reader reads an event's arguments.
type reader struct{ b []byte }

func (r *reader) uint() uint32 {
	if len(r.b) < 4 {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) int() int32 { return int32(r.uint()) }

func (r *reader) string() string {
	n := int(r.uint())
	if n == 0 || n > len(r.b) {
		return ""
	}
	s := string(r.b[:n-1])
	r.b = r.b[(n+3)&^3:]
	return s
}

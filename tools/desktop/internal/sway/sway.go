// Package sway speaks sway's IPC (the i3 IPC protocol over a unix socket:
// "i3-ipc", a length and a type, then JSON) for the windows of a sway
// session: their process, title, place on the screen and focus, and the
// commands that focus and close them.
package sway

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Message types.
const (
	runCommand = 0
	getTree    = 4
)

const magic = "i3-ipc"

// timeout bounds one exchange with sway.
const timeout = 5 * time.Second

// Conn is a connection to sway's IPC socket. Its methods run one at a
// time.
type Conn struct {
	mu   sync.Mutex
	conn net.Conn
	path string
}

// Dial connects to the socket at path ($SWAYSOCK when empty).
func Dial(path string) (*Conn, error) {
	if path == "" {
		path = os.Getenv("SWAYSOCK")
	}
	if path == "" {
		return nil, errors.New("no sway IPC socket: SWAYSOCK is not set (window focus and closing need sway's IPC)")
	}
	c, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return nil, fmt.Errorf("connect to sway's IPC at %s: %w", path, err)
	}
	return &Conn{conn: c, path: path}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.conn.Close() }

// call sends a message and reads its reply.
func (c *Conn) call(typ uint32, payload []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.conn.SetDeadline(time.Now().Add(timeout))
	msg := append([]byte(magic), make([]byte, 8)...)
	binary.LittleEndian.PutUint32(msg[6:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(msg[10:], typ)
	if _, err := c.conn.Write(append(msg, payload...)); err != nil {
		return nil, fmt.Errorf("sway IPC at %s: %w", c.path, err)
	}
	head := make([]byte, 14)
	if _, err := io.ReadFull(c.conn, head); err != nil {
		return nil, fmt.Errorf("sway IPC at %s: %w", c.path, err)
	}
	if string(head[:6]) != magic {
		return nil, fmt.Errorf("sway IPC at %s: the reply does not start with %q", c.path, magic)
	}
	n, got := binary.LittleEndian.Uint32(head[6:]), binary.LittleEndian.Uint32(head[10:])
	if got != typ {
		return nil, fmt.Errorf("sway IPC at %s: a reply of type %d to a message of type %d", c.path, got, typ)
	}
	if n > 64<<20 {
		return nil, fmt.Errorf("sway IPC at %s: a reply of %d bytes", c.path, n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.conn, body); err != nil {
		return nil, fmt.Errorf("sway IPC at %s: %w", c.path, err)
	}
	return body, nil
}

// Rect is a box in the layout.
type Rect struct {
	X      int `json:"x"`
	Y      int `json:"y"`
	Width  int `json:"width"`
	Height int `json:"height"`
}

// Node is one node of sway's tree.
type Node struct {
	ID         int64  `json:"id"`
	Type       string `json:"type"`
	Name       string `json:"name"`
	PID        int    `json:"pid"`
	AppID      string `json:"app_id"`
	Focused    bool   `json:"focused"`
	Visible    *bool  `json:"visible"`
	Rect       Rect   `json:"rect"`
	WindowRect Rect   `json:"window_rect"`
	DecoRect   Rect   `json:"deco_rect"`
	Nodes      []Node `json:"nodes"`
	Floating   []Node `json:"floating_nodes"`
}

// Window is an application's window.
type Window struct {
	ID      int64
	PID     int
	Title   string
	AppID   string
	Focused bool
	// Content is where the application draws, in the layout: the node's
	// box less the decorations sway draws around it; Box is the node's
	// box with its title bar (sway's rect leaves it out).
	Content, Box Rect
}

// Windows lists the application windows (views) in the tree, in tree
// order, the scratchpad's left out.
func (c *Conn) Windows() ([]Window, error) {
	body, err := c.call(getTree, nil)
	if err != nil {
		return nil, err
	}
	var root Node
	if err := json.Unmarshal(body, &root); err != nil {
		return nil, fmt.Errorf("sway's tree: %w", err)
	}
	var out []Window
	var walk func(n Node)
	walk = func(n Node) {
		if n.Type == "workspace" && n.Name == "__i3_scratch" {
			return
		}
		if (n.Type == "con" || n.Type == "floating_con") && n.PID > 0 && len(n.Nodes) == 0 {
			if n.Visible == nil || *n.Visible {
				out = append(out, Window{ID: n.ID, PID: n.PID, Title: n.Name, AppID: n.AppID, Focused: n.Focused,
					Content: Rect{n.Rect.X + n.WindowRect.X, n.Rect.Y + n.WindowRect.Y, n.WindowRect.Width, n.WindowRect.Height},
					Box:     Rect{n.Rect.X, n.Rect.Y - n.DecoRect.Height, n.Rect.Width, n.Rect.Height + n.DecoRect.Height}})
			}
		}
		for _, k := range n.Nodes {
			walk(k)
		}
		for _, k := range n.Floating {
			walk(k)
		}
	}
	walk(root)
	return out, nil
}

// Command runs sway commands and reports the first that failed.
func (c *Conn) Command(cmd string) error {
	body, err := c.call(runCommand, []byte(cmd))
	if err != nil {
		return err
	}
	var res []struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return fmt.Errorf("sway's answer to %q: %w", cmd, err)
	}
	var errs []string
	for _, r := range res {
		if !r.Success {
			errs = append(errs, r.Error)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("sway refused %q: %s", cmd, strings.Join(errs, "; "))
	}
	return nil
}

// Focus raises and focuses a window.
func (c *Conn) Focus(id int64) error { return c.Command(fmt.Sprintf("[con_id=%d] focus", id)) }

// Place floats a window and makes its box, title bar included, w x h
// pixels at x, y of the layout (resized first: sway resizes a floating
// window about its centre).
func (c *Conn) Place(id int64, x, y, w, h int) error {
	return c.Command(fmt.Sprintf("[con_id=%d] floating enable, resize set width %d px height %d px, move absolute position %d px %d px", id, w, h, x, y))
}

// Kill asks a window's application to close it (as its close button
// does: the application may ask first).
func (c *Conn) Kill(id int64) error { return c.Command(fmt.Sprintf("[con_id=%d] kill", id)) }

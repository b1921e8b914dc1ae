package display

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os/user"
	"time"
)

// Xvfb's access: the server is started with a cookie only this display's
// files hold (-auth), so that no other local user can connect; then the
// user that started it is let in without a cookie (server-interpreted
// "localuser"), so that Saucer's own X connection (xgb reads its cookie
// from the process's environment, which Saucer does not change) and the
// applications connect as they would to the person's display.

// writeXauthority writes an Xauthority file with one MIT-MAGIC-COOKIE-1
// entry for any display (family FamilyWild).
func writeXauthority(path string, cookie []byte) error {
	var b []byte
	field := func(s []byte) { b = append(b, byte(len(s)>>8), byte(len(s))); b = append(b, s...) }
	b = append(b, 0xff, 0xff) // FamilyWild
	field(nil)                // address
	field(nil)                // display number: any
	field([]byte("MIT-MAGIC-COOKIE-1"))
	field(cookie)
	return writeFile(path, b)
}

// allowLocalUser connects to display number n (at socket) with the cookie and adds
// "localuser:NAME" (this process's user) to its access list.
func allowLocalUser(socket, n string, cookie []byte) error {
	u, err := user.Current()
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("unix", socket, 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect to the X display :%s: %w", n, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	le := binary.LittleEndian
	name := []byte("MIT-MAGIC-COOKIE-1")
	setup := []byte{'l', 0, 11, 0, 0, 0, byte(len(name)), 0, byte(len(cookie)), 0, 0, 0}
	setup = append(append(setup, pad(name)...), pad(cookie)...)
	if _, err := c.Write(setup); err != nil {
		return err
	}
	head := make([]byte, 8)
	if _, err := io.ReadFull(c, head); err != nil {
		return fmt.Errorf("the X display :%s: %w", n, err)
	}
	rest := make([]byte, 4*int(le.Uint16(head[6:])))
	if _, err := io.ReadFull(c, rest); err != nil {
		return err
	}
	if head[0] != 1 {
		return fmt.Errorf("the X display :%s refused Saucer's own cookie", n)
	}
	// ChangeHosts(Insert, ServerInterpreted, "localuser\0NAME"), then
	// GetInputFocus, whose reply says the change was made (an error would
	// come first).
	addr := pad(append([]byte("localuser\x00"), u.Username...))
	req := []byte{109, 0, 0, 0, 5, 0, 0, 0}
	le.PutUint16(req[2:], uint16(2+len(addr)/4))
	le.PutUint16(req[6:], uint16(len("localuser\x00")+len(u.Username)))
	req = append(req, addr...)
	req = append(req, 43, 0, 1, 0)
	if _, err := c.Write(req); err != nil {
		return err
	}
	reply := make([]byte, 32)
	if _, err := io.ReadFull(c, reply); err != nil {
		return err
	}
	if reply[0] == 0 {
		return fmt.Errorf("the X display :%s refused to let the user %s in (X error %d)", n, u.Username, reply[1])
	}
	return nil
}

// pad pads b to a multiple of 4 bytes, as X requests are.
func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

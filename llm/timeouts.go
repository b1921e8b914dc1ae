package llm

import (
	"fmt"
	"time"
)

// Timeouts bound one request to a model server. Zero fields take the
// defaults, which suit slow local models (a CPU-bound model may think for
// minutes before its first byte when it does not stream).
type Timeouts struct {
	// Connect bounds opening the connection (TCP and TLS).
	Connect time.Duration `yaml:"connect,omitempty" json:"connect,omitempty"`
	// FirstByte bounds the wait for the response headers.
	FirstByte time.Duration `yaml:"first_byte,omitempty" json:"first_byte,omitempty"`
	// Idle bounds a gap in the body (between stream events).
	Idle time.Duration `yaml:"idle,omitempty" json:"idle,omitempty"`
	// Total bounds the whole request, body included.
	Total time.Duration `yaml:"total,omitempty" json:"total,omitempty"`
}

// DefaultTimeouts are used for the zero fields of Timeouts.
var DefaultTimeouts = Timeouts{Connect: 10 * time.Second, FirstByte: 5 * time.Minute, Idle: 2 * time.Minute, Total: 15 * time.Minute}

// WithDefaults fills zero fields from DefaultTimeouts.
func (t Timeouts) WithDefaults() Timeouts {
	d := DefaultTimeouts
	if t.Connect <= 0 {
		t.Connect = d.Connect
	}
	if t.FirstByte <= 0 {
		t.FirstByte = d.FirstByte
	}
	if t.Idle <= 0 {
		t.Idle = d.Idle
	}
	if t.Total <= 0 {
		t.Total = d.Total
	}
	return t
}

func (t Timeouts) String() string {
	return fmt.Sprintf("connect %s, first_byte %s, idle %s, total %s", t.Connect, t.FirstByte, t.Idle, t.Total)
}

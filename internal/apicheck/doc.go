// Package apicheck holds tests of Saucer's public API as a whole: what the
// packages a library user imports expose. It has no code of its own.
package apicheck

package shell

import (
	"crypto/rand"
	"encoding/hex"
)

// tagVar names the environment variable that marks every process a
// command starts. A child that leaves the command's process group (setsid,
// a double fork) still carries it, so a timeout can find and kill it.
const tagVar = "SAUCER_COMMAND"

// newTag returns a tag no other command shares.
func newTag() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

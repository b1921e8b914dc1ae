//go:build !unix

package store

import "os"

// lockFile cannot lock on this system: it only opens the file.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}

//go:build !unix

package trajectory

import "os"

// createFile creates the new file path for writing.
func createFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

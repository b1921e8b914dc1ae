//go:build unix

package trajectory

import (
	"os"
	"syscall"
)

// createFile creates the new file path for writing. The file is not put
// in Go's poller, as os.OpenFile tries to: a regular file cannot be, and
// trying costs five system calls (epoll_ctl and four fcntl) on every
// recorded task.
func createFile(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o644)
	for err == syscall.EINTR { // as os.OpenFile does (a slow file system)
		fd, err = syscall.Open(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o644)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

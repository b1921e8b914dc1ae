package main

import (
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/saucerhq/saucer/config"
)

// secretsFD names the descriptor that carries the hidden credentials to
// the re-executed process.
const secretsFD = "SAUCER_SECRETS_FD"

// hideSecrets keeps Saucer's credentials out of its process's environment
// block. /proc/PID/environ shows the environment a process was started
// with, and every command the shell tool runs can read its parent's; Go's
// os.Unsetenv does not change it. So when credentials (config.SecretName)
// are in the environment, Saucer starts itself again, in the same process,
// without them; their values travel through an anonymous memory file and
// are set in Go's environment of the new image, where os.Getenv (and the
// MCP servers Saucer starts) still find them. Root commands can still read
// a process's memory: the sandboxed device is the boundary, this keeps
// a plain `cat /proc/$PPID/environ` from printing API keys.
func hideSecrets() {
	if fd := os.Getenv(secretsFD); fd != "" {
		restoreSecrets(fd)
		return
	}
	var keep, secrets []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if config.SecretName(name) {
			secrets = append(secrets, kv)
		} else {
			keep = append(keep, kv)
		}
	}
	if len(secrets) == 0 {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	fd, err := unix.MemfdCreate("saucer-secrets", 0) // inherited across exec
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "saucer-secrets")
	if _, err := f.WriteString(strings.Join(secrets, "\x00")); err != nil {
		f.Close()
		return
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return
	}
	// Go marks the descriptor close-on-exec; this one must survive.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
		f.Close()
		return
	}
	err = syscall.Exec(exe, os.Args, append(keep, secretsFD+"="+strconv.Itoa(fd)))
	// Exec failed: go on as before, with the credentials where they were.
	f.Close()
	_ = err
}

func restoreSecrets(fdText string) {
	os.Unsetenv(secretsFD)
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 3 {
		return
	}
	f := os.NewFile(uintptr(fd), "saucer-secrets")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if name, value, ok := strings.Cut(kv, "="); ok && name != "" {
			os.Setenv(name, value)
		}
	}
}

package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Devices a session can run on.
const (
	// DeviceLocal runs tools on this machine, guarded by mcp.policy.
	DeviceLocal = "local"
	// DeviceSandbox runs the shell and files tools, and stdio servers
	// marked sandbox: true, in a throwaway sandbox (package sandbox).
	DeviceSandbox = "sandbox"
)

// Sandbox configures the sandboxed device (device: sandbox).
type Sandbox struct {
	// Root is the read-only lower layer of the sandbox's root filesystem:
	// "/" (the host's), a root filesystem directory (an image root built
	// from Debian packages, docs/sandbox.md), or auto: the image root at
	// /var/lib/saucer/rootfs where there is one, else the host's.
	Root string `yaml:"root"`
	// WorkDir is where the session's working directory appears inside,
	// and where commands start.
	WorkDir string `yaml:"workdir"`
	// Network is none (its own loopback only) or host.
	Network string `yaml:"network"`
	// Hide lists folders that are empty inside and files that are absent
	// (homes, /tmp, /run, credentials in /etc), even in shown folders.
	Hide []string `yaml:"hide"`
	// Show lists host folders the sandbox sees besides its root's system
	// folders and the working directory (over an image root: read-only).
	Show []string `yaml:"show"`
	// Memory and Disk are sizes ("2GiB", "512MiB"); Disk bounds what is
	// written outside the working directory. PIDs and CPUs limit
	// processes and cores; 0 means the default, -1 none.
	Memory Size    `yaml:"memory"`
	Disk   Size    `yaml:"disk"`
	PIDs   int     `yaml:"pids"`
	CPUs   float64 `yaml:"cpus"`
}

// Size is a number of bytes written with an optional unit: KiB, MiB, GiB
// (or K, M, G, same meaning).
type Size int64

// UnmarshalText reads "512MiB", "2G" or "1048576".
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// MarshalText writes the size in bytes.
func (s Size) MarshalText() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }

// ParseSize reads a size with an optional binary unit.
func ParseSize(t string) (int64, error) {
	t = strings.TrimSpace(t)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || (n < 0 && n != -1) {
		return 0, fmt.Errorf("size %q: write a number of bytes with an optional unit (512MiB, 2GiB), or -1 for none", t)
	}
	if n == -1 {
		return -1, nil
	}
	return n * mult, nil
}

func (c *Config) validateDevice() []string {
	var errs []string
	switch c.Device {
	case "", DeviceLocal, DeviceSandbox:
	default:
		errs = append(errs, fmt.Sprintf("device: %q is not local or sandbox", c.Device))
	}
	switch c.Sandbox.Network {
	case "", "none", "host":
	default:
		errs = append(errs, fmt.Sprintf("sandbox.network: %q is not none or host", c.Sandbox.Network))
	}
	if w := c.Sandbox.WorkDir; w != "" && !strings.HasPrefix(w, "/") {
		errs = append(errs, fmt.Sprintf("sandbox.workdir: %q must be an absolute path inside the sandbox", w))
	}
	for _, h := range c.Sandbox.Hide {
		if !strings.HasPrefix(h, "/") {
			errs = append(errs, fmt.Sprintf("sandbox.hide: %q must be an absolute path", h))
		}
	}
	for _, p := range c.Sandbox.Show {
		if !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Sprintf("sandbox.show: %q must be an absolute host path", p))
		}
	}
	return errs
}

package client

import (
	"bufio"
	"math"
	"net"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"strings"

	"github.com/saucerhq/saucer/command"
)

// DetectDevice describes the machine this process runs on. It reads only
// local sources (the Go runtime, /proc, /etc/os-release, the network
// interfaces), never the network, and leaves out what it cannot learn.
//
// os_version is the distribution's name and the kernel release
// ("Debian GNU/Linux 12 (bookworm); kernel 6.1.0-18-amd64") when both are
// known. Features are "cli" and "file_system", plus "gui" when a display
// (DISPLAY or WAYLAND_DISPLAY) is set. User, UID and Home are this
// process's, whose environment the tools inherit; WorkDir is left to the
// caller, which knows where the tools start.
func DetectDevice() command.DeviceInfo {
	d := command.DeviceInfo{
		Platform:      runtime.GOOS,
		OSVersion:     osVersion(),
		Arch:          runtime.GOARCH,
		CPUCount:      runtime.NumCPU(),
		CPUModel:      cpuModel(),
		MemoryTotalGB: memoryTotalGB(),
		IPAddress:     localIP(),
		Features:      []string{"cli", "file_system"},
		PlatformType:  "computer",
		SchemaVersion: "1.0",
	}
	d.Hostname, _ = os.Hostname()
	d.User, d.UID, d.Home = currentUser()
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		d.Features = append(d.Features, "gui")
	}
	return d
}

// currentUser is who this process runs as and its home: $HOME first, as
// the shell's ~ is, then the user database's. A uid with no name (a
// container's arbitrary uid) is still a uid.
func currentUser() (name, uid, home string) {
	if u, err := user.Current(); err == nil {
		name, uid, home = u.Username, u.Uid, u.HomeDir
	} else if id := os.Getuid(); id >= 0 {
		uid = strconv.Itoa(id)
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		home = h
	}
	return name, uid, home
}

func osVersion() string {
	var parts []string
	if name := osReleaseName(); name != "" {
		parts = append(parts, name)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		if rel := strings.TrimSpace(string(b)); rel != "" {
			parts = append(parts, "kernel "+rel)
		}
	}
	return strings.Join(parts, "; ")
}

// osReleaseName is PRETTY_NAME from /etc/os-release.
func osReleaseName() string {
	v, _ := fieldOf("/etc/os-release", "PRETTY_NAME", '=')
	return strings.Trim(v, `"'`)
}

func cpuModel() string {
	for _, key := range []string{"model name", "Model", "cpu model", "Hardware"} {
		if v, ok := fieldOf("/proc/cpuinfo", key, ':'); ok && v != "" {
			return v
		}
	}
	return ""
}

// memoryTotalGB is MemTotal from /proc/meminfo in GiB, to two decimals.
func memoryTotalGB() float64 {
	v, ok := fieldOf("/proc/meminfo", "MemTotal", ':')
	if !ok {
		return 0
	}
	kb, err := strconv.ParseFloat(strings.TrimSuffix(v, " kB"), 64)
	if err != nil {
		return 0
	}
	return math.Round(kb/(1<<20)*100) / 100
}

// fieldOf returns the value of the first "key<sep>value" line of a file.
func fieldOf(path, key string, sep byte) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), string(sep))
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// localIP is the first IPv4 address of an interface that is up and not a
// loopback, or "" if there is none.
func localIP() string {
	ifaces, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && ipnet.IP.To4() != nil {
				return ipnet.IP.String()
			}
		}
	}
	return ""
}

package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Image names the root filesystem the sandbox's tools see: its folder on
// the host and the system it holds (its os-release PRETTY_NAME), as in
// "/var/lib/saucer/rootfs (Debian GNU/Linux 12 (bookworm))". Two
// sandboxes with the same Image offer the same root image: a
// constellation moves a node planned on one only to another such.
func (s *Sandbox) Image() string { return imageName(s.opts.Root) }

func imageName(root string) string {
	name := ""
	for _, p := range []string{"etc/os-release", "usr/lib/os-release"} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
				name = strings.Trim(v, `"'`)
			}
		}
		break
	}
	if name == "" {
		return root
	}
	return root + " (" + name + ")"
}

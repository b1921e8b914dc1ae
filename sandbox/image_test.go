package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestImageName: a root is named by its folder and the system its
// os-release says it holds; a root without one by its folder alone.
func TestImageName(t *testing.T) {
	root := t.TempDir()
	if got := imageName(root); got != root {
		t.Errorf("a root without os-release: %q, want %q", got, root)
	}
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "os-release"), []byte("NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"), 0o644)
	if got, want := imageName(root), root+" (Debian GNU/Linux 12 (bookworm))"; got != want {
		t.Errorf("imageName = %q, want %q", got, want)
	}
}

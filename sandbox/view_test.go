package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/internal/hosttest"
)

// Over the host's root a task sees the system folders, not the host's
// other folders (other projects' checkouts), homes or credentials; a
// folder named in Show is seen.
func TestHostRootShowsOnlyWhatTasksNeed(t *testing.T) {
	other, err := os.MkdirTemp("/", "saucer-test-checkout-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(other)
	os.WriteFile(filepath.Join(other, "secret.txt"), []byte("another project"), 0o644)
	shown, err := os.MkdirTemp("/", "saucer-test-shown-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(shown)
	os.WriteFile(filepath.Join(shown, "tool.txt"), []byte("named in show"), 0o644)

	s := need(t, Options{Root: "/", Show: []string{shown}})
	if out, _ := run(t, s, "cat "+other+"/secret.txt; ls -A "+other); out != "cat: "+other+"/secret.txt: No such file or directory" {
		t.Errorf("a host folder not named in the config: %q", out)
	}
	if out, _ := run(t, s, "cat "+shown+"/tool.txt"); out != "named in show" {
		t.Errorf("a folder named in show: %q", out)
	}
	// Homes, credentials, service data and logs: empty or absent.
	if out, _ := run(t, s, "ls -A /home /etc/ssh /etc/ssl/private /var/log /var/lib/postgresql /opt 2>/dev/null | grep -v ':$' | grep .; cat /proc/keys; test -e /etc/shadow- && echo backup"); out != "" {
		t.Errorf("host content seen inside: %q", out)
	}
	// What programs need is there.
	if out, code := run(t, s, "ls /usr/bin/env /etc/passwd >/dev/null && dpkg -l >/dev/null 2>&1; echo $?"); code != 0 || out != "0" {
		t.Errorf("system folders: %q", out)
	}
}

// The account files keep their accounts without the hashes.
func TestCleanAccounts(t *testing.T) {
	src := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(src, []byte("root:$6$salt$hash:20000:0:99999:7:::\ndaemon:*:20000:0:99999:7:::\nlocked:!$y$j9T$x$y:20000::::::\nnone::20000::::::\n"), 0o640)
	dir := t.TempDir()
	if err := cleanAccounts(dir, src); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, src))
	if err != nil {
		t.Fatal(err)
	}
	if want := "root:*:20000:0:99999:7:::\ndaemon:*:20000:0:99999:7:::\nlocked:*:20000::::::\nnone::20000::::::\n"; string(b) != want {
		t.Errorf("cleaned:\n%s\nwant:\n%s", b, want)
	}
}

// Where an image root is installed it is the default: tasks see a clean
// distribution, not this host's /usr; host folders named in Show are
// bound read-only.
func TestImageRootIsTheDefault(t *testing.T) {
	if rootMissing(DefaultImageRoot) != "" {
		hosttest.Missing(t, "no image root at %s (docs/sandbox.md builds one)", DefaultImageRoot)
	}
	shown := t.TempDir()
	os.WriteFile(filepath.Join(shown, "tool.txt"), []byte("from the host"), 0o644)
	s := need(t, Options{Show: []string{shown}})
	if s.opts.Root != DefaultImageRoot {
		t.Fatalf("root %s, want %s", s.opts.Root, DefaultImageRoot)
	}
	want, _ := os.ReadFile(filepath.Join(DefaultImageRoot, "etc/os-release"))
	if out, _ := run(t, s, "cat /etc/os-release"); out != strings.TrimSpace(string(want)) {
		t.Errorf("os-release inside is not the image's: %q", out)
	}
	marker, err := os.MkdirTemp("/usr/local", "saucer-test-host-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(marker)
	if _, code := run(t, s, "test -e "+marker); code == 0 {
		t.Errorf("the host's /usr is seen inside")
	}
	if out, _ := run(t, s, "cat "+shown+"/tool.txt; echo; (echo x > "+shown+"/new) 2>/dev/null || echo read-only"); out != "from the host\nread-only" {
		t.Errorf("a folder named in show: %q", out)
	}
}

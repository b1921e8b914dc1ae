// Package storetest starts a real PostgreSQL for tests: Debian's package,
// in a temporary data directory, on a loopback port, as the postgres user
// (initdb refuses root), stopped when the test ends.
package storetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// bin finds a PostgreSQL program: on PATH, else in Debian's versioned
// directory.
func bin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	sort.Strings(found)
	if len(found) > 0 {
		return found[len(found)-1]
	}
	return ""
}

// Postgres starts a PostgreSQL server for t and returns the URL of an
// empty database on it. Without PostgreSQL installed the test is skipped
// with a message, or fails when CI is set: CI installs it.
func Postgres(t testing.TB) string {
	t.Helper()
	initdb, pgctl := bin("initdb"), bin("pg_ctl")
	if initdb == "" || pgctl == "" {
		msg := "PostgreSQL is not installed (initdb and pg_ctl not found; apt-get install postgresql)"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "saucer-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// As root, run PostgreSQL as the postgres user, who must own the
	// data directory.
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("PostgreSQL refuses to run as root and there is no postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	run := func(args ...string) {
		t.Helper()
		full := append(append([]string{}, asUser...), args...)
		out, err := exec.Command(full[0], full[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run(initdb, "-D", data, "-U", "saucer", "--auth=trust", "-E", "UTF8", "--no-sync")
	port := freePort(t)
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=200", port, dir)
	run(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")
	t.Cleanup(func() {
		full := append(append([]string{}, asUser...), pgctl, "-D", data, "-m", "immediate", "-w", "stop")
		exec.Command(full[0], full[1:]...).Run()
	})
	return fmt.Sprintf("postgres://saucer@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=10", port)
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	time.Sleep(time.Millisecond)
	return ln.Addr().(*net.TCPAddr).Port
}

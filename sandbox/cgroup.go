package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the host's cgroup file systems are mounted.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupPatterns match the cgroups of every sandbox (sweep).
func cgroupPatterns() []string {
	return []string{filepath.Join(cgroupRoot, "saucer", "saucer-"+dirPrefix+"*"),
		filepath.Join(cgroupRoot, "*", "saucer-"+dirPrefix+"*")}
}

// cgroup is the sandbox's cgroup: one directory on a cgroup v2 host, one per
// controller on a v1 host. Limits that cannot be set are named in notes;
// the sandbox still starts (its namespaces are the boundary, the limits
// are about resources).
type cgroup struct {
	dirs  []string // directories made, to remove
	notes []string // what is and is not limited
}

// newCgroup makes a cgroup named name with o's limits, as far as the host
// allows.
func newCgroup(name string, o Options) *cgroup {
	cg := &cgroup{}
	name = "saucer-" + name
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		cg.v2(name, o)
	} else {
		cg.v1(name, o)
	}
	return cg
}

func (cg *cgroup) v2(name string, o Options) {
	parent := filepath.Join(cgroupRoot, "saucer")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		cg.notes = append(cg.notes, "no limits: cannot create a cgroup ("+err.Error()+")")
		return
	}
	// Controllers must be enabled for the children of each level.
	os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
	os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+memory +pids +cpu"), 0)
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		cg.notes = append(cg.notes, "no limits: cannot create a cgroup ("+err.Error()+")")
		return
	}
	cg.dirs = append(cg.dirs, dir)
	cg.set(dir, "memory.max", o.Memory > 0, strconv.FormatInt(o.Memory, 10), fmt.Sprintf("memory %s", bytesText(o.Memory)))
	cg.set(dir, "memory.swap.max", o.Memory > 0, "0", "")
	cg.set(dir, "pids.max", o.PIDs > 0, strconv.Itoa(o.PIDs), fmt.Sprintf("%d processes", o.PIDs))
	cg.set(dir, "cpu.max", o.CPUs > 0, fmt.Sprintf("%d 100000", int(o.CPUs*100000)), fmt.Sprintf("%g CPUs", o.CPUs))
}

func (cg *cgroup) v1(name string, o Options) {
	for _, c := range []struct {
		controller, file string
		want             bool
		value, note      string
	}{
		{"memory", "memory.limit_in_bytes", o.Memory > 0, strconv.FormatInt(o.Memory, 10), "memory " + bytesText(o.Memory)},
		{"pids", "pids.max", o.PIDs > 0, strconv.Itoa(o.PIDs), fmt.Sprintf("%d processes", o.PIDs)},
		{"cpu", "cpu.cfs_quota_us", o.CPUs > 0, strconv.Itoa(int(o.CPUs * 100000)), fmt.Sprintf("%g CPUs", o.CPUs)},
	} {
		if !c.want {
			continue
		}
		dir := filepath.Join(cgroupRoot, c.controller, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.notes = append(cg.notes, fmt.Sprintf("%s not limited: cannot create a %s cgroup (%v)", c.note, c.controller, err))
			continue
		}
		cg.dirs = append(cg.dirs, dir)
		if c.controller == "cpu" {
			os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), []byte("100000"), 0)
		}
		cg.set(dir, c.file, true, c.value, c.note)
	}
}

func (cg *cgroup) set(dir, file string, want bool, value, note string) {
	if !want {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		if note != "" {
			cg.notes = append(cg.notes, fmt.Sprintf("%s not limited (%s: %v)", note, file, err))
		}
		return
	}
	if note != "" {
		cg.notes = append(cg.notes, note)
	}
}

// procs are the files a process writes its PID to, to join.
func (cg *cgroup) procs() []string {
	var out []string
	for _, d := range cg.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

func (cg *cgroup) describe() string {
	if len(cg.notes) == 0 {
		return "no cgroup limits"
	}
	return strings.Join(cg.notes, ", ")
}

// remove deletes the cgroup once its processes are gone (they are killed
// with the PID namespace; the kernel takes a moment to reap them, longer
// on a loaded machine, and rmdir fails with EBUSY until it has). It tries
// again, less and less often, for up to removeWait.
func (cg *cgroup) remove() error {
	var errs []error
	for _, d := range cg.dirs {
		if err := removeCgroupDir(d, time.Now().Add(removeWait)); err != nil {
			errs = append(errs, fmt.Errorf("sandbox: remove cgroup %s: %w (it is removed by the next Saucer to start a sandbox once it is empty)", d, err))
		}
	}
	return errors.Join(errs...)
}

// removeWait is how long remove waits for a cgroup's processes to be gone.
const removeWait = 10 * time.Second

// removeCgroupDir removes the cgroup directory d, trying again until
// deadline while it still holds processes.
func removeCgroupDir(d string, deadline time.Time) error {
	pause := time.Millisecond
	for {
		err := os.Remove(d)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

package desktop

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/saucerhq/saucer/internal/tail"
)

// launched is an application started by launch_app.
type launched struct {
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *tail.Buffer
	// startupID is the startup notification id it was given
	// (DESKTOP_STARTUP_ID): toolkits put it on the windows they open for
	// it (_NET_STARTUP_ID), even when another process opens them.
	startupID string
}

func (p *launched) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // what it left in its group
}

// owns reports whether process pid belongs to this launch: the process
// started, one in its process group (what it forks stays there unless it
// makes a group of its own, as `sh -c 'app &'` and soffice's launcher
// do not), or one of its descendants.
func (p *launched) owns(pid int) bool {
	root := p.cmd.Process.Pid
	if pid <= 0 {
		return false
	}
	if pid == root {
		return true
	}
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == root {
		return true
	}
	for i := 0; i < 64 && pid > 1; i++ {
		if pid = parentPID(pid); pid == root {
			return true
		}
	}
	return false
}

// startTime is when process pid started, in clock ticks since boot (0 if
// it is gone).
func startTime(pid int) uint64 {
	f := procStat(pid) // state ppid ... starttime is the 20th
	if len(f) < 20 {
		return 0
	}
	t, _ := strconv.ParseUint(f[19], 10, 64)
	return t
}

// parentPID reads a process's parent from /proc (0 if it is gone).
func parentPID(pid int) int {
	f := procStat(pid) // state ppid ...
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// launchedWindow reports whether w is a window of something this
// desktop launched: by its process, or by the startup id on its X window.
func (d *Desktop) launchedWindow(w Window) bool {
	for _, p := range d.launched {
		if p.owns(w.PID) {
			return true
		}
	}
	if xw, ok := d.xwindow(w); ok && xw.startupID != "" {
		for _, p := range d.launched {
			if p.startupID == xw.startupID {
				return true
			}
		}
	}
	return false
}

var launches atomic.Int64

// a11yEnv turns accessibility on in what a desktop launches: GTK 2/3's
// bridge, Qt's, Chromium's and Electron's browser side (the page side
// needs --force-renderer-accessibility, added for programs known to be
// Chromium), and LibreOffice's GTK 3 front end, whose accessibility
// bridge is the one that reaches AT-SPI (its plain X11 one does not).
func a11yEnv() []string {
	env := []string{"NO_AT_BRIDGE=0", "GTK_MODULES=gail:atk-bridge", "GNOME_ACCESSIBILITY=1", "ACCESSIBILITY_ENABLED=1",
		"QT_ACCESSIBILITY=1", "QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1"}
	if os.Getenv("SAL_USE_VCLPLUGIN") == "" {
		env = append(env, "SAL_USE_VCLPLUGIN=gtk3")
	}
	return env
}

// chromiumFlag is what Chromium-based programs need to expose their
// pages' content to AT-SPI.
const chromiumFlag = "--force-renderer-accessibility"

// isChromium reports whether program is a Chromium browser or an
// Electron application: by name, or by the resource packs every Chromium
// build ships beside its binary.
func isChromium(program string) bool {
	path, err := exec.LookPath(program)
	if err != nil {
		return false
	}
	base := filepath.Base(path)
	for _, n := range []string{"chromium", "chromium-browser", "chrome", "google-chrome", "google-chrome-stable", "brave-browser", "microsoft-edge", "vivaldi", "electron"} {
		if base == n {
			return true
		}
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		for _, pak := range []string{"chrome_100_percent.pak", "resources.pak"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(real), pak)); err == nil {
				return true
			}
		}
	}
	return false
}

// Launch starts an application (a command line, or a desktop file's
// Exec) and waits for its first window: a new window of the process
// started, of a process it forked or started (through a shell, a
// launcher script, a desktop file whose Exec forks), or one carrying its
// startup notification id (a single-instance application that hands the
// request to its running instance). An application that shows no window
// in time is stopped and reported.
func (d *Desktop) Launch(ctx context.Context, command []string, desktopFile string) (*Effect, error) {
	return d.LaunchWithin(ctx, command, desktopFile, 0)
}

// LaunchWithin is Launch waiting up to timeout for the window (0: the
// desktop's launch timeout): a model that knows an application is slow
// to start (LibreOffice's first start on a loaded machine) says so.
func (d *Desktop) LaunchWithin(ctx context.Context, command []string, desktopFile string, timeout time.Duration) (*Effect, error) {
	if timeout <= 0 {
		timeout = d.opts.LaunchTimeout
	}
	if desktopFile != "" {
		if len(command) > 0 {
			return nil, errors.New("give a command or a desktop file, not both")
		}
		var err error
		if command, err = desktopExec(desktopFile); err != nil {
			return nil, err
		}
	}
	if len(command) == 0 && desktopFile == "" {
		command = d.opts.App
	}
	if len(command) == 0 {
		return nil, errors.New("nothing to launch: give command (program and arguments) or desktop_file")
	}
	unlock, err := d.lockConnected(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	before, err := d.windows(ctx)
	if err != nil {
		return nil, err
	}
	args := command[1:]
	browser := isChromium(command[0])
	if browser && !strings.Contains(strings.Join(args, " "), chromiumFlag) {
		args = append([]string{chromiumFlag}, args...)
	}
	// Chromium refuses to run as root without --no-sandbox ("Running as
	// root without --no-sandbox is not supported"): a model learnt that
	// only from a failed launch.
	if browser && os.Geteuid() == 0 && d.opts.Launcher == nil && !slices.Contains(args, "--no-sandbox") {
		args = append([]string{"--no-sandbox"}, args...)
	}
	// A run that ends stops the applications it launched, and LibreOffice
	// stopped so opens its next start on the Document Recovery dialog,
	// which took the next task's keys and then hung: --norestore.
	if isLibreOffice(command[0]) && !slices.Contains(args, "--norestore") {
		args = append([]string{"--norestore"}, args...)
	}
	startupID := fmt.Sprintf("saucer-%d-%d_TIME0", os.Getpid(), launches.Add(1))
	var cmd *exec.Cmd
	if d.opts.Launcher != nil {
		// Where the display runs (a sandbox): the options' environment is
		// the display's as the application sees it; nothing of this
		// process's goes in.
		env := append(append(slices.Clone(d.opts.Env), a11yEnv()...), "DESKTOP_STARTUP_ID="+startupID)
		cmd = d.opts.Launcher.AppCommand(d.opts.Dir, env, append([]string{command[0]}, args...)...)
		// The application may outlive the process that entered its
		// place (and leave its group), holding its error output.
		cmd.WaitDelay = 2 * time.Second
	} else {
		cmd = exec.Command(command[0], args...)
		cmd.Env = append(os.Environ(), d.opts.Env...)
		if d.opts.Display != "" {
			cmd.Env = append(cmd.Env, "DISPLAY="+d.opts.Display)
		}
		if d.opts.Wayland != "" {
			cmd.Env = append(cmd.Env, "WAYLAND_DISPLAY="+d.opts.Wayland, "GDK_BACKEND=wayland", "QT_QPA_PLATFORM=wayland")
		}
		if d.opts.Bus != "" {
			cmd.Env = append(cmd.Env, "DBUS_SESSION_BUS_ADDRESS="+d.opts.Bus)
		}
		cmd.Env = append(append(cmd.Env, a11yEnv()...), "DESKTOP_STARTUP_ID="+startupID)
		cmd.Dir = d.opts.Dir
	}
	p := &launched{cmd: cmd, done: make(chan struct{}), stderr: &tail.Buffer{}, startupID: startupID}
	cmd.Stderr = p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch %s: %w", command[0], err)
	}
	started := startTime(cmd.Process.Pid)
	go func() { _ = cmd.Wait(); close(p.done) }()
	d.launched = append(d.launched, p)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(d.opts.Settle)
	defer tick.Stop()
	exited := false
	done := p.done
	var prev []Window
	for {
		select {
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-deadline.C:
			if !exited {
				p.stop()
				return nil, fmt.Errorf("%s showed no window within %s; it was stopped%s (if it is only slow to start, launch it again with a longer timeout)", command[0], timeout, stderrNote(p))
			}
			return nil, fmt.Errorf("%s exited (%s) and no new window appeared within %s%s (a program that hands its files to a running instance may have shown them in a window that was open already: list_windows)", command[0], cmd.ProcessState, timeout, stderrNote(p))
		case <-done:
			// A launcher that forks and exits, or hands over to a
			// running instance: its windows are found by process group,
			// descent or startup id.
			exited, done = true, nil
			if cmd.ProcessState != nil && !cmd.ProcessState.Success() {
				return nil, fmt.Errorf("%s exited (%s) without showing a window%s", command[0], cmd.ProcessState, stderrNote(p))
			}
		case <-tick.C:
		}
		now, err := d.windows(ctx)
		if err != nil {
			return nil, err
		}
		opened, _ := diffWindows(before, now)
		var xs []xwin
		var mine, handed []Window
		for _, w := range opened {
			if p.owns(w.PID) {
				mine = append(mine, w)
				continue
			}
			if xs == nil {
				xs, _ = d.x.topLevels()
			}
			if xw, ok := matchWindow(xs, w); ok && xw.startupID == p.startupID {
				mine = append(mine, w)
			} else if exited && started > 0 && startTime(w.PID) > 0 && startTime(w.PID) < started {
				handed = append(handed, w)
			}
		}
		// A launcher that handed its files to an instance already running
		// (LibreOffice, a GApplication such as Drawing) and exited: the
		// windows that instance opened since are the launch's.
		handedTo := 0
		if len(mine) == 0 && len(handed) > 0 {
			mine, handedTo = handed, handed[0].PID
		}
		// Some applications replace their first window at once
		// (LibreOffice's document window): a window counts once it is
		// still there a settle time later.
		if len(mine) > 0 && sameWindows(mine, prev) {
			mine, ready := d.ready(ctx, mine, browser, timeout)
			did := fmt.Sprintf("launched %s (pid %d)", strings.Join(command, " "), cmd.Process.Pid)
			if handedTo > 0 {
				did += fmt.Sprintf(", which handed over to %s already running (pid %d): it opened the new window", mine[0].App, handedTo)
			}
			if focus := d.focusNew(ctx, mine); focus != "" {
				did += "; " + focus
			}
			if w := mine[0]; w.Bounds.W < minUsable || w.Bounds.H < minUsable {
				ready = fmt.Sprintf("not ready: its window %s is %dx%d pixels, too small to show its controls (an application that remembers a tiny size, with no window manager to correct it): resize_window or maximize_window it, then observe it",
					w.ID, w.Bounds.W, w.Bounds.H)
			}
			return &Effect{Did: did, Ready: ready, NewWindows: mine, Window: &mine[0]}, nil
		}
		prev = mine
	}
}

// minUsable is the least width and height of a window that launch_app
// calls ready: LibreOffice, reopened without a window manager, has come
// up 24x26 pixels, with nothing of it to see or click.
const minUsable = 64

// focusNew gives a launched application's first window the keyboard
// focus, as a window manager does with a new window (without one, under
// Xvfb, the focus stayed on the window that had it, and typing went
// there), and reads the windows again; it says what it did, or "".
func (d *Desktop) focusNew(ctx context.Context, ws []Window) string {
	xw, ok := d.xwindow(ws[0])
	if !ok || d.x.activate(xw) != nil {
		return ""
	}
	// The application marks its window active once it has read the
	// focus change: wait for that (a second at most), so that what acts
	// on the active window next acts on this one.
	for deadline := time.Now().Add(time.Second); ; {
		now, err := d.windows(ctx)
		if err != nil {
			break
		}
		refresh(ws, now)
		if ws[0].Active || time.Now().After(deadline) {
			break
		}
		select {
		case <-time.After(25 * time.Millisecond):
		case <-ctx.Done():
			return ""
		}
	}
	return fmt.Sprintf("window %s has the keyboard focus", ws[0].ID)
}

// refresh replaces each window of ws by the same window in now, as it
// is there.
func refresh(ws, now []Window) {
	for i := range ws {
		for _, w := range now {
			if w.ref == ws[i].ref {
				ws[i] = w
			}
		}
	}
}

// ready waits until the first of a launched application's windows is
// ready for an agent, and says what it waited for: no document in it
// still loading (AT-SPI's BUSY state on a document, which browsers and
// office suites set until the document's load completes), a browser's
// page in its tree (Chromium shows its tab a while before the page's
// tree arrives), and a tree that reads the same twice in a row (some
// toolkits build theirs once asked, or change their title as they load).
// Documents are waited on up to limit; a tree that keeps changing without
// one loading (a clock, an animation) for at most maxSettleReads reads.
// It returns the windows as they are then, and what it waited for, or why
// it gave up.
func (d *Desktop) ready(ctx context.Context, ws []Window, browser bool, limit time.Duration) ([]Window, string) {
	start := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	prev := ""
	loading := ""
	waited := "" // what was seen loading
	reads := 0   // since nothing was loading
	for {
		wake := d.a.changes()
		if loading != "" {
			// Read it afresh: a tree read before is reused while the
			// objects it read send no events, and Chromium's page
			// arrives under objects it did not read.
			delete(d.trees, ws[0].ref)
		}
		obs, err := d.observe(ctx, ws[0], ObserveOptions{})
		if err != nil {
			return ws, fmt.Sprintf("not waited for: reading window %s failed: %v", ws[0].ID, err)
		}
		loading = d.loading(ws[0], browser)
		text := obs.Window.Title + "\n" + obs.Text()
		reads++
		if loading != "" {
			reads = 0
			if waited == "" {
				waited = loading
			} else if !strings.Contains(waited, loading) && len(waited) < 300 {
				waited += ", then " + loading
			}
		}
		if loading == "" && (text == prev || reads >= maxSettleReads) {
			what := "its controls read the same twice"
			if text != prev {
				what = fmt.Sprintf("its controls were still changing after %d reads", reads)
			}
			if browser {
				what = "its page loaded and " + what
			}
			if waited != "" {
				what = "waited for " + waited + "; " + what
			}
			return ws, fmt.Sprintf("ready after %s: %s", seconds(time.Since(start)), what)
		}
		prev = text
		// What may change it is an event (the events of one change come
		// in a burst: read after it); a toolkit that sends none is read
		// again a settle time later.
		select {
		case <-wake:
			time.Sleep(eventBurst)
		case <-time.After(d.opts.Settle):
		case <-deadline.C:
			if loading == "" {
				loading = "its controls to hold still"
			}
			return ws, fmt.Sprintf("gave up after %s waiting for %s; it may still change: observe it, or wait_for the control you need", seconds(time.Since(start)), loading)
		case <-ctx.Done():
			return ws, "not waited for: " + ctx.Err().Error()
		}
		if now, err := d.windows(ctx); err == nil {
			refresh(ws, now)
		}
	}
}

// eventBurst is how long a read waits after the event that woke it, for
// the rest of the events of the same change.
const eventBurst = 50 * time.Millisecond

// maxSettleReads bounds the reads launch_app makes of a window whose tree
// keeps changing while no document of it is loading.
const maxSettleReads = 5

// loading says what of window w, as last read, is still loading: a
// document marked BUSY, or, in a browser, a page not yet in its tree
// (browser: the launch was of a Chromium program). Empty when nothing is.
func (d *Desktop) loading(w Window, browser bool) string {
	rt, ok := d.trees[w.ref]
	if !ok {
		return "its tree"
	}
	if what := docLoading(rt.t); what != "" {
		return what
	}
	if browser && !hasPage(rt.t) {
		return "the browser's page to appear in its tree"
	}
	return ""
}

// docLoading says which document of t was loading when it was read: one
// marked busy, or a browser's empty document (no name, no children), which
// a tab holds until its first page arrives.
func docLoading(t *tree) string {
	for _, n := range t.nodes {
		role := roleName(n.role)
		if !strings.HasPrefix(role, "document ") {
			continue
		}
		if n.states.has(stBusy) {
			return fmt.Sprintf("the %s %q to finish loading (it is busy)", role, cleanName(n.name))
		}
		if role == "document web" && n.name == "" && n.childCount == 0 {
			return "the browser's page to appear in its tree"
		}
	}
	return ""
}

// hasPage says whether t holds a browser's page: a web document with a
// name or children.
func hasPage(t *tree) bool {
	for _, n := range t.nodes {
		if roleName(n.role) == "document web" && (n.name != "" || n.childCount > 0) {
			return true
		}
	}
	return false
}

// seconds says a duration in seconds, to the tenth.
func seconds(t time.Duration) string { return fmt.Sprintf("%.1f s", t.Seconds()) }

func sameWindows(a, b []Window) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ref != b[i].ref {
			return false
		}
	}
	return true
}

func stderrNote(p *launched) string {
	s := p.stderr.String()
	if s == "" {
		return ""
	}
	return "; its error output ends: " + s
}

// desktopExec reads the Exec line of a desktop file: a path, or a name
// looked up in the XDG application folders.
// appDirs are where desktop files are, most personal first.
func appDirs() []string {
	return []string{filepath.Join(os.Getenv("HOME"), ".local/share/applications"), "/usr/local/share/applications", "/usr/share/applications"}
}

// installedNote lists the applications installed here (their desktop
// files' names, with the desktop file to launch), for a model that must
// choose one: a model in the seat, told no window was open, spent a step
// asking the shell which paint programs there were. Empty where the
// desktop runs in a sandbox (the host's list is not what it has) or
// nothing is found.
func (d *Desktop) installedNote() string {
	if d.opts.Launcher != nil {
		return ""
	}
	apps := installedApps(appDirs())
	if len(apps) == 0 {
		return ""
	}
	const most = 60
	more := ""
	if len(apps) > most {
		more = fmt.Sprintf(", and %d more", len(apps)-most)
		apps = apps[:most]
	}
	return ". Installed applications, as name: program (launch_app with command [program, file]): " + strings.Join(apps, "; ") + more
}

// installedApps reads the desktop files in dirs (the first of a name
// wins): "Name: program" for each application shown in menus, sorted by
// name. The program, not the desktop file's id: a model in the seat took
// "com.github.maoschanz.drawing" for a program.
func installedApps(dirs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, dir := range dirs {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			id, ok := strings.CutSuffix(e.Name(), ".desktop")
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			var name, program string
			show, inEntry := true, false
			for _, line := range strings.Split(string(b), "\n") {
				line = strings.TrimSpace(line)
				if strings.HasPrefix(line, "[") {
					inEntry = line == "[Desktop Entry]"
					continue
				}
				if !inEntry {
					continue
				}
				switch {
				case strings.HasPrefix(line, "Name="):
					if name == "" {
						name = strings.TrimPrefix(line, "Name=")
					}
				case strings.HasPrefix(line, "Exec="):
					if args, err := execArgs(strings.TrimPrefix(line, "Exec=")); err == nil && len(args) > 0 && program == "" {
						program = args[0]
						if filepath.Base(program) == program || strings.HasPrefix(program, "/usr/bin/") {
							program = filepath.Base(program)
						}
					}
				case line == "NoDisplay=true", line == "Hidden=true", strings.HasPrefix(line, "Type=") && line != "Type=Application":
					show = false
				}
			}
			if show && name != "" && program != "" {
				out = append(out, name+": "+program)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return out
}

func desktopExec(name string) ([]string, error) {
	path := name
	if !strings.Contains(name, "/") {
		if !strings.HasSuffix(name, ".desktop") {
			name += ".desktop"
		}
		for _, dir := range appDirs() {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				path = filepath.Join(dir, name)
				break
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("desktop file %s: %w (give a path, or a name from /usr/share/applications)", name, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	inEntry := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inEntry = line == "[Desktop Entry]"
			continue
		}
		if inEntry && strings.HasPrefix(line, "Exec=") {
			args, err := execArgs(strings.TrimPrefix(line, "Exec="))
			if err != nil {
				return nil, fmt.Errorf("desktop file %s: %w", path, err)
			}
			if len(args) > 0 {
				return args, nil
			}
		}
	}
	return nil, fmt.Errorf("desktop file %s has no Exec line in [Desktop Entry]", path)
}

// execArgs splits an Exec value as the desktop entry specification says:
// first the escapes of every string value (\s \n \t \r \\), then
// arguments separated by spaces, double quotes around one that holds
// spaces (with \" \` \$ \\ escaped inside), and field codes (%f, %U, ...)
// dropped, as Saucer opens no files through them; %% is a percent sign.
func execArgs(s string) ([]string, error) {
	s = strings.NewReplacer(`\\`, `\`, `\s`, " ", `\n`, "\n", `\t`, "\t", `\r`, "\r").Replace(s)
	var args []string
	var cur strings.Builder
	inArg, quoted := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quoted && ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			quoted, inArg = !quoted, true
		case !quoted && ch == ' ':
			if inArg {
				args, inArg = append(args, cur.String()), false
				cur.Reset()
			}
		case !quoted && ch == '%' && i+1 < len(s):
			i++
			if s[i] == '%' {
				cur.WriteByte('%')
				inArg = true
			}
		default:
			cur.WriteByte(ch)
			inArg = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("Exec %q has an unclosed quote", s)
	}
	if inArg && cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args, nil
}

package prompts

import (
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
)

// The device section tells the agents who the tools run as, where they
// start and which device they are on, so that they need not ask the
// shell; the device's id shows only when it is more than its host name.
func TestDeviceSectionSaysWhereTheToolsRun(t *testing.T) {
	s := mustLoad(t, "")
	base := command.DeviceInfo{Platform: "linux", Hostname: "vm"}
	with := func(edit func(*command.DeviceInfo)) command.DeviceInfo {
		d := base
		edit(&d)
		return d
	}
	cases := []struct {
		name      string
		dev       command.DeviceInfo
		want, not []string
	}{
		{"a user with a home, in a folder",
			with(func(d *command.DeviceInfo) {
				d.User, d.UID, d.Home, d.WorkDir = "alice", "1000", "/home/alice", "/home/alice/work"
			}),
			[]string{"- User: alice (uid 1000), home /home/alice\n", "- Working directory: /home/alice/work"},
			[]string{"root", "- Device:"}},
		{"root in a sandbox",
			with(func(d *command.DeviceInfo) { d.User, d.UID, d.Home, d.WorkDir = "root", "0", "/root", "/root" }),
			[]string{"- User: root (uid 0), home /root\n", "- Working directory: /root"}, nil},
		{"a uid without a name",
			with(func(d *command.DeviceInfo) { d.UID, d.Home = "1000770000", "/" }),
			[]string{"- User: uid 1000770000, home /\n"}, []string{"root"}},
		{"a home alone",
			with(func(d *command.DeviceInfo) { d.Home = "/home/x" }),
			[]string{"- Home: /home/x"}, []string{"- User:"}},
		{"a constellation's device",
			with(func(d *command.DeviceInfo) { d.DeviceID = "linux2" }),
			[]string{"- Hostname: vm\n- Device: linux2"}, nil},
		{"a device named by its host name",
			with(func(d *command.DeviceInfo) { d.DeviceID = "vm" }),
			nil, []string{"- Device:"}},
		{"UFO's device, which says none of it",
			base,
			nil, []string{"- User:", "- Home:", "- Working directory:", "- Device:"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, data := range []any{
				HostData{Device: c.dev, Mode: ModeTools, Round: 1, MaxRounds: 3},
				AppData{App: "shell", Device: c.dev, Mode: ModeJSON, Step: 1, MaxSteps: 3},
			} {
				name := "host_system"
				if _, ok := data.(AppData); ok {
					name = "app_system"
				}
				got, err := s.Render(name, data)
				if err != nil {
					t.Fatal(err)
				}
				// The fast path and text/template agree on the new lines.
				if want, err := slowRender(s, name, data); err != nil || got != want {
					t.Fatalf("%s: Render and text/template differ (%v):\n%s\n---\n%s", name, err, got, want)
				}
				section := got[strings.Index(got, "## Device"):]
				section = section[:strings.Index(section[1:], "\n## ")+1]
				for _, w := range c.want {
					if !strings.Contains(section, w) {
						t.Errorf("%s: the device section lacks %q:\n%s", name, w, section)
					}
				}
				for _, n := range c.not {
					if strings.Contains(section, n) {
						t.Errorf("%s: the device section says %q:\n%s", name, n, section)
					}
				}
			}
		})
	}
}

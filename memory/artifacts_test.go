package memory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A value over the threshold is replaced by its head and a handle; the
// rest is read back exactly, by byte range or by line.
func TestArtifactsKeepAndRead(t *testing.T) {
	a := &Artifacts{Threshold: 1000, Head: 100}
	if got := a.Text("short"); got != "short" {
		t.Errorf("a short value changed: %q", got)
	}
	var b strings.Builder
	for i := 1; b.Len() < 50_000; i++ {
		fmt.Fprintf(&b, "line %d é\n", i)
	}
	big := b.String()
	shown := a.Text(big)
	if len(shown) > 600 || !strings.HasPrefix(shown, big[:60]) || !strings.HasSuffix(shown, big[len(big)-24:]) || !strings.Contains(shown, fmt.Sprintf("of %d)", len(big))) {
		t.Fatalf("stand-in (%d bytes): %q", len(shown), shown)
	}
	if again := a.Text(big); again != shown {
		t.Errorf("the same value got another stand-in")
	}
	h := handleOf(t, shown)
	// The middle, exactly, cut to whole characters.
	got, err := a.Read(ReadArgs{Handle: h, Offset: 25_000, Length: 300})
	if err != nil {
		t.Fatal(err)
	}
	header, body, _ := strings.Cut(got, "\n")
	var from, to, total int
	if _, err := fmt.Sscanf(header, "[bytes %d to %d of %d]", &from, &to, &total); err != nil || total != len(big) || body != big[from:to] ||
		from > 25_000 || from < 25_000-3 || to-from > 300 || to-from < 290 {
		t.Errorf("read %q (from %d to %d of %d)", got, from, to, total)
	}
	// Lines that match, with their numbers.
	got, err = a.Read(ReadArgs{Handle: h, Grep: `^line 3711 `})
	if err != nil || !strings.Contains(got, "1 of ") || !strings.Contains(got, "3711: line 3711 é") {
		t.Errorf("grep: %q %v", got, err)
	}
	// What a read returns stays under the threshold.
	got, _ = a.Read(ReadArgs{Handle: h, Length: 1 << 20})
	if len(got) > a.Threshold {
		t.Errorf("a read of %d bytes", len(got))
	}
	got, _ = a.Read(ReadArgs{Handle: h, Grep: "line"})
	if len(got) > a.Threshold || !strings.Contains(got, "lines match") {
		t.Errorf("a grep of %d bytes: %.100q", len(got), got)
	}
	// Mistakes are explained.
	for _, bad := range []ReadArgs{{Handle: "nope"}, {Handle: h, Offset: len(big)}, {Handle: h, Grep: "("}} {
		if _, err := a.Read(bad); err == nil {
			t.Errorf("%+v read", bad)
		}
	}
}

// In JSON, each long string is kept aside on its own and the structure
// stays; short JSON keeps its bytes.
func TestArtifactsJSON(t *testing.T) {
	a := &Artifacts{Threshold: 1000, Head: 50}
	small := []byte(`{"b": 1, "a": "x"}`)
	if got := a.JSON(small); string(got) != string(small) {
		t.Errorf("small JSON changed: %s", got)
	}
	stdout := strings.Repeat("0123456789\n", 1000)
	raw, _ := json.Marshal(map[string]any{"exit_code": 0, "stdout": stdout, "stderr": ""})
	got := a.JSON(raw)
	var v map[string]any
	if err := json.Unmarshal(got, &v); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	s, _ := v["stdout"].(string)
	if len(got) > 1000 || v["exit_code"] != 0.0 || !strings.HasPrefix(s, stdout[:33]) || !strings.HasSuffix(s, stdout[len(stdout)-11:]) {
		t.Fatalf("shortened %s", got)
	}
	h := handleOf(t, s)
	read, err := a.Read(ReadArgs{Handle: h, Offset: 5500, Length: 22})
	if err != nil || !strings.HasSuffix(read, "\n"+stdout[5500:5522]) {
		t.Errorf("read %q %v", read, err)
	}
	// Nothing is kept without a threshold.
	var none *Artifacts
	if none.Text(stdout) != stdout || string((&Artifacts{}).JSON(raw)) != string(raw) {
		t.Error("a store without a threshold shortened a value")
	}
}

func handleOf(t *testing.T, standIn string) string {
	t.Helper()
	_, rest, ok := strings.Cut(standIn, "[artifact ")
	if !ok {
		t.Fatalf("no handle in %q", standIn)
	}
	return rest[:handleLen]
}

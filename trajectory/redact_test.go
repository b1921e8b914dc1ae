package trajectory

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// regexpRedact is how redaction was done before the one-pass scan, kept
// as the reference: the literal secrets replaced, then each pattern's
// matches in turn, each a regular expression over the whole text.
func regexpRedact(secrets, patterns []string, s string) string {
	key := strings.Join(secrets, "\x00") + "\x01" + strings.Join(patterns, "\x00")
	ref, ok := refs[key]
	if !ok {
		r, err := NewRedactor(secrets, nil)
		if err != nil {
			panic(err)
		}
		ref.replacer = r.replacer
		for _, p := range patterns {
			ref.res = append(ref.res, regexp.MustCompile(p))
		}
		refs[key] = ref
	}
	if ref.replacer != nil {
		s = ref.replacer.Replace(s)
	}
	for _, re := range ref.res {
		g := re.SubexpIndex("secret")
		if g < 0 {
			s = re.ReplaceAllLiteralString(s, Redacted)
			continue
		}
		var b strings.Builder
		last := 0
		for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
			if m[2*g] < 0 {
				continue
			}
			b.WriteString(s[last:m[2*g]])
			b.WriteString(Redacted)
			last = m[2*g+1]
		}
		b.WriteString(s[last:])
		s = b.String()
	}
	return s
}

var refs = map[string]struct {
	replacer *strings.Replacer
	res      []*regexp.Regexp
}{}

// pieces build texts full of near-secrets: the patterns' literals, their
// characters, the bytes that end a match, and secrets cut short.
var pieces = []string{
	"sk-", "sk-ant-", "AKIA", "ASIA", "://", "postgres://", "u:", ":", "@", "/", "=", "&", ";", " ", "\t", "\n", `"`, `'`, `\`, `\"`,
	"token", "TOKEN", "password", "passwd", "api_key", "apikey", "ACCESS_KEY", "secret", "MY_SECRET_", "Bearer ", "bearer ", "BEARER ",
	"ghp_", "gho_", "gh", "xoxb-", "xox", "AIza", "[REDACTED]", "\u212a", "\u017f", "é", "\xff", "-", "_", ".", "+", "~",
	"abcdefghijklmnop", "0123456789ABCDEF", "ZZZZ", "q", "7", "hunter2-password", `pa"ss\word`,
}

func randomText(rng *rand.Rand) string {
	var b strings.Builder
	for n := rng.IntN(24); n >= 0; n-- {
		if rng.IntN(4) == 0 {
			for k := rng.IntN(40); k >= 0; k-- {
				b.WriteByte("abcXYZ0189_-"[rng.IntN(12)])
			}
			continue
		}
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

var testSecrets = []string{"hunter2-password", `pa"ss\word`, "sk-proj-0123456789abcdefXYZ"}

// TestRedactorMatchesRegexps: the one-pass redactor gives exactly what
// the regular expressions over the whole text give, on random texts built
// from the patterns' literals, secrets and the bytes around them.
func TestRedactorMatchesRegexps(t *testing.T) {
	user := append(DefaultPatterns(), `corp_[a-z]{8}`, `(?i)x[0-9]+y`, `D\]tail=[a-z]+`)
	r, err := NewRedactor(testSecrets, user)
	if err != nil {
		t.Fatal(err)
	}
	if !r.rescan {
		t.Error(`a user pattern starting "D]" (the end of [REDACTED]) does not make the redactor look again after a replacement`)
	}
	plain, _ := NewRedactor(testSecrets, DefaultPatterns())
	if plain.rescan {
		t.Error("a default pattern's literal can be made by a replacement")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	changed := 0
	for range 4000 {
		s := randomText(rng)
		for _, c := range []struct {
			r        *Redactor
			patterns []string
		}{{plain, DefaultPatterns()}, {r, user}} {
			want := regexpRedact(testSecrets, c.patterns, s)
			if got := c.r.String(s); got != want {
				t.Fatalf("redacting %q\n got %q\nwant %q", s, got, want)
			}
			if got := string(c.r.Bytes([]byte(s))); got != want {
				t.Fatalf("redacting bytes %q\n got %q\nwant %q", s, got, want)
			}
			if want != s {
				changed++
			}
		}
	}
	if changed < 1300 {
		t.Errorf("only %d of 8000 texts held a secret: the generator tests too little", changed)
	}
}

// FuzzRedactor compares the one-pass redactor with the regular
// expressions on any text.
func FuzzRedactor(f *testing.F) {
	for _, s := range []string{"token=abcdefgh", "postgres://u:pw@h", "Bearer abcdefghijklmnop1", "x sk-0123456789abcdefXYZ y", "ab://u:p&ss@h token=ab" + `pa"ss\word`} {
		f.Add(s)
	}
	r, err := NewRedactor(testSecrets, DefaultPatterns())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := r.String(s), regexpRedact(testSecrets, DefaultPatterns(), s); got != want {
			t.Fatalf("redacting %q\n got %q\nwant %q", s, got, want)
		}
	})
}

// BenchmarkRedactor: MB/s of the one-pass redactor and of the regular
// expressions it replaced, on a 64 KB event line like a tool's output
// (a directory listing, with the '=' and ':' a recording is full of) and
// no secret in it.
func BenchmarkRedactor(b *testing.B) {
	var line strings.Builder
	line.WriteString(`{"seq":12,"type":"dispatch","results":[{"status":"success","result":{"stdout":"`)
	for i := 0; line.Len() < 64<<10; i++ {
		line.WriteString(`-rw-r--r-- 1 root root  4096 Nov 26 02:47 file` + string(rune('a'+i%26)) + `.go (size=4096, mode=0644, url=https://example.com/a?b=c)\n`)
	}
	line.WriteString(`"}}]}`)
	s := line.String()
	r, err := NewRedactor(testSecrets, DefaultPatterns())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("onepass", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if r.String(s) != s {
				b.Fatal("redacted a text without secrets")
			}
		}
	})
	b.Run("regexps", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			if regexpRedact(testSecrets, DefaultPatterns(), s) != s {
				b.Fatal("redacted a text without secrets")
			}
		}
	})
}

// TestMayHoldLarge: a line is decoded to move values out only when it can
// hold one: a long string under an external key, or a result or
// parameters object or array near the threshold's size; a long line of
// small tool schemas ("parameters":{...} each) is written as it is.
func TestMayHoldLarge(t *testing.T) {
	small := `{"name":"t","parameters":{"type":"object","properties":{"p":{"type":"string","description":"a } in a string"}}}}`
	line := `{"type":"model_call","call":{"request":{"tools":[` + strings.Repeat(small+",", 60) + small + `]}}}`
	if len(line) < 4096 {
		t.Fatalf("the line is %d bytes", len(line))
	}
	if mayHoldLarge([]byte(line), 4096) {
		t.Error("a line of small schemas is taken for one holding a large value")
	}
	big := `{"type":"command","parameters":{"text":[` + strings.Repeat(`"word",`, 400) + `"end"]}}`
	if !mayHoldLarge([]byte(big), 4096) {
		t.Error("a parameters object of 2.8 KB (over half the threshold) is not moved out")
	}
	str := `{"type":"x","content":"` + strings.Repeat("y", 5000) + `"}`
	if !mayHoldLarge([]byte(str), 4096) {
		t.Error("a long content string is not moved out")
	}
	// Escaped quotes do not end a string; a quote after an escaped
	// backslash does.
	quotes := `{"type":"x","content":"` + strings.Repeat(`say \"hi\" `, 500) + `"}`
	if !mayHoldLarge([]byte(quotes), 4096) {
		t.Error("a long content string of escaped quotes is not moved out")
	}
	shortStrings := `{"type":"x","content":"` + strings.Repeat(`a\\","b":"`, 500) + `"}`
	if mayHoldLarge([]byte(shortStrings), 4096) {
		t.Error("short strings ending in an escaped backslash are taken for one long string")
	}
}

// TestRedactorPassesOnlyWhereMatchesStayInside: the redactor steps over
// the parts of a line it found clean only when no secret or pattern can
// match a quote, an edge of the text or nothing.
func TestRedactorPassesOnlyWhereMatchesStayInside(t *testing.T) {
	for _, c := range []struct {
		secrets, patterns []string
		want              bool
	}{
		{nil, DefaultPatterns(), true},
		{[]string{"hunter2-secret"}, append(DefaultPatterns(), `card-[0-9]{16}`), true},
		{[]string{`quote"secret`}, DefaultPatterns(), false},
		{nil, []string{`"password":"[a-z]+`}, false},
		{nil, []string{`key=[^,]+`}, false},
		{nil, []string{`token.{8}`}, false},
		{nil, []string{`^secret[0-9]+`}, false},
		{nil, []string{`x*`}, false},
	} {
		r, err := NewRedactor(c.secrets, c.patterns)
		if err != nil {
			t.Fatal(err)
		}
		if r.passable != c.want {
			t.Errorf("secrets %q, patterns %q: passable %v, want %v", c.secrets, c.patterns, r.passable, c.want)
		}
	}
}

// TestSecretInEveryFieldIsRedacted puts a literal secret and a key of a
// known shape into each string of an event in turn (every field of every
// type, map keys and values, raw values), first a long value without
// them, which the redactor then knows clean, then the same value with
// them: neither reaches the recording.
func TestSecretInEveryFieldIsRedacted(t *testing.T) {
	const secret = "hunter2-literal-secret"
	const key = "sk-abcdefghijklmnopqrstuvwx"
	red, err := NewRedactor([]string{secret}, DefaultPatterns())
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a long value that repeats from task to task. ", 8)
	// The generator writes values JSON cannot hold (an infinite number)
	// now and then: the base event is the first, from a fixed seed, that
	// it can, so the test does not depend on how many values the event's
	// fields draw.
	base := func() Event {
		for seed := uint64(5); ; seed++ {
			var e Event
			(&generator{r: rand.New(rand.NewPCG(seed, 6)), full: true}).fill(reflect.ValueOf(&e).Elem(), 0)
			e.Time = time.Time{}
			if _, err := json.Marshal(e); err == nil {
				return e
			}
		}
	}
	e0 := base()
	n := setLeaf(reflect.ValueOf(&e0).Elem(), -1, "")
	if n < 100 {
		t.Fatalf("only %d places for a secret", n)
	}
	w, err := Create(filepath.Join(t.TempDir(), "run"), Options{Redactor: red, ArtifactThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	for k := range n {
		clean, dirty := base(), base()
		setLeaf(reflect.ValueOf(&clean).Elem(), k, long)
		setLeaf(reflect.ValueOf(&dirty).Elem(), k, long+secret+" "+key+" "+long)
		if b, _ := json.Marshal(dirty); !strings.Contains(string(b), secret) {
			t.Fatalf("place %d: the event does not hold the secret", k)
		}
		for _, e := range []Event{clean, clean, dirty, dirty} {
			if err := w.Write(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(w.Dir(), EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, secret) || strings.Contains(line, key) {
			t.Fatalf("line %d (place %d) holds a secret: %.300s", i+1, i/4, line)
		}
		if i%4 >= 2 && !strings.Contains(line, Redacted) {
			t.Fatalf("line %d (place %d) redacted nothing", i+1, i/4)
		}
	}
}

// setLeaf sets the k-th place for a string in v (a string, an element of
// a string list, a map's key or value, a raw value) to s, and returns how
// many places there are.
func setLeaf(v reflect.Value, k int, s string) int {
	n := 0
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch {
		case v.Type() == timeType:
		case v.Type() == rawType:
			if n == k {
				b, _ := json.Marshal(map[string]string{"text": s})
				v.SetBytes(b)
			}
			n++
		case v.Kind() == reflect.String:
			if n == k {
				v.SetString(s)
			}
			n++
		case v.Kind() == reflect.Pointer:
			walk(v.Elem())
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() != reflect.Uint8:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case v.Kind() == reflect.Map:
			keys := v.MapKeys()
			sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
			for _, mk := range keys {
				if n == k { // the key
					val := v.MapIndex(mk)
					v.SetMapIndex(mk, reflect.Value{})
					v.SetMapIndex(reflect.ValueOf(s).Convert(mk.Type()), val)
				}
				n++
				if et := v.Type().Elem(); et.Kind() == reflect.String || et == anyType {
					if n == k { // the value
						v.SetMapIndex(mk, reflect.ValueOf(s).Convert(et))
					}
					n++
				}
			}
		}
	}
	walk(v)
	return n
}

// TestSeenSetComparesContent: a remembered value is found by its content,
// not by its hash alone; when full the set keeps what came back lately.
func TestSeenSetComparesContent(t *testing.T) {
	var s seenSet[int]
	s.add(7, []byte("clean text"), 1)
	if v, ok := s.get(7, []byte("clean text")); !ok || v != 1 {
		t.Fatalf("get(clean text) = %d, %v", v, ok)
	}
	if _, ok := s.get(7, []byte("sk-secret text")); ok {
		t.Fatal("another text with the same hash was taken for the remembered one")
	}
	big := make([]byte, maxSeen/4)
	for i := range 3 {
		s.get(7, []byte("clean text")) // comes back in every task
		s.add(uint64(100+i), append(big, byte(i)), 0)
	}
	if _, ok := s.get(7, []byte("clean text")); !ok {
		t.Fatal("a value that came back in every round was forgotten")
	}
	if _, ok := s.get(100, append(big, 0)); ok {
		t.Fatal("the oldest value was kept past the bound")
	}
}

package wl

import (
	"strings"
	"testing"
)

// TestKeysSitWhereAUSKeyboardHasThem: the keymap puts a character on the
// key of a US keyboard that types it, shifted ones on that key's second
// level, and the rest on keys no US keyboard uses. Chromium reads a
// key's code: with d on the keypad's divide key (the keymap's old order),
// ctrl+d never bookmarked, and an uppercase S on a code Chromium does not
// know was dropped.
func TestKeysSitWhereAUSKeyboardHasThem(t *testing.T) {
	s := &Screen{codes: map[uint32]uint32{}, shifted: map[uint32]bool{}}
	s.add(baseKeys())
	for _, c := range []struct {
		sym, code uint32
		shift     bool
	}{{'d', 32, false}, {'D', 32, true}, {'1', 2, false}, {'!', 2, true}, {'~', 41, true}, {'|', 43, true},
		{' ', 57, false}, {0xff0d, 28, false}, {0xffe3, 29, false}, {0xffbe, 59, false}, {0xffc9, 88, false}} {
		if s.codes[c.sym] != c.code || s.shifted[c.sym] != c.shift {
			t.Errorf("keysym %#x is on key %d (shift %v), want %d (shift %v)", c.sym, s.codes[c.sym], s.shifted[c.sym], c.code, c.shift)
		}
	}
	s.add([]uint32{0x10020ac}) // €: no US key has it
	if code := s.codes[0x10020ac]; code != 184 {
		t.Errorf("€ is on key %d, want 184 (F14: Meta_L took F13)", code)
	}
	km := Keymap(s.syms, s.upper)
	for _, want := range []string{`key <K32> { type = "TWO_LEVEL", [ U0064, U0044 ] };`, "<K32> = 40;", `key <K184> { type = "ONE_LEVEL", [ U20AC ] };`, `key <K102> { type = "ONE_LEVEL", [ Home ] };`} {
		if !strings.Contains(km, want) {
			t.Errorf("the keymap lacks %q", want)
		}
	}
}

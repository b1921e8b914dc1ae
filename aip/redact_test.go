package aip_test

import (
	"testing"

	"github.com/saucerhq/saucer/aip"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"ws://h:1/ws":                          "ws://h:1/ws",
		"ws://h:1/ws?token=k3y":                "ws://h:1/ws?token=REDACTED",
		"ws://token:1/ws?a=token&token=x&b=2":  "ws://token:1/ws?a=token&token=REDACTED&b=2",
		"wss://h/ws?token=a%2Fb#token=frag":    "wss://h/ws?token=REDACTED#token=frag",
		"ws://h/ws?tokens=keep&token=":         "ws://h/ws?tokens=keep&token=",
		"ws://h/ws?x=1&token=k1&token=k2":      "ws://h/ws?x=1&token=REDACTED&token=REDACTED",
		"not a url?token=still-hidden&x=token": "not a url?token=REDACTED&x=token",
	} {
		if got := aip.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

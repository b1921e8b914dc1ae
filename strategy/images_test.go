package strategy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/saucerhq/saucer/command"
)

func TestResultImagesAndText(t *testing.T) {
	r := command.Result{Status: command.Success, Result: json.RawMessage(
		`[{"type":"text","text":"3 controls"},{"type":"image","mime_type":"image/png","data":"iVBORw0KGgo="}]`)}
	imgs := ResultImages(r)
	if len(imgs) != 1 || imgs[0].MIMEType != "image/png" || string(imgs[0].Data) != "\x89PNG\r\n\x1a\n" {
		t.Fatalf("images = %+v", imgs)
	}
	text := ResultText(r, 0)
	if strings.Contains(text, "iVBORw0KGgo=") || !strings.Contains(text, "attached to the request as an image") || !strings.Contains(text, "3 controls") {
		t.Fatalf("text = %s", text)
	}
	// A plain JSON list is left alone, and carries no image.
	plain := command.Result{Status: command.Success, Result: json.RawMessage(`[{"type":"note","data":"x"}]`)}
	if ResultImages(plain) != nil || ResultText(plain, 0) != `[{"data":"x","type":"note"}]` {
		t.Fatalf("plain list: %v %s", ResultImages(plain), ResultText(plain, 0))
	}
}

func TestDesktopObserveParams(t *testing.T) {
	if _, err := newDesktopObserve(map[string]any{"windw": "w1"}); err == nil || !strings.Contains(err.Error(), `unknown param "windw"`) {
		t.Fatalf("%v", err)
	}
	if _, err := newDesktopObserve(map[string]any{"window": 3}); err == nil || !strings.Contains(err.Error(), "must be a string") {
		t.Fatalf("%v", err)
	}
}

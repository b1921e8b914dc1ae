package strategy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/saucerhq/saucer/command"
	"github.com/saucerhq/saucer/llm"
)

// A result that carries images (an MCP tool's image contents) is a list of
// content entries, {"type":"image","mime_type":...,"data":base64}. The
// model reads the text with each image's data replaced by a note, and
// sees the images themselves attached to the request: those of this
// step's data collection, and those of the latest step's results, so that
// a screenshot the model asked for reaches it once, on the next step.

type contentEntry struct {
	Type string `json:"type"`
	MIME string `json:"mime_type"`
	Data string `json:"data"`
}

// ResultImages returns the images a result carries.
func ResultImages(r command.Result) []llm.Image {
	if r.Status != command.Success || len(r.Result) == 0 || r.Result[0] != '[' {
		return nil
	}
	var entries []contentEntry
	if json.Unmarshal(r.Result, &entries) != nil {
		return nil
	}
	var out []llm.Image
	for _, e := range entries {
		if e.Type != "image" || e.Data == "" {
			continue
		}
		data, err := base64.StdEncoding.DecodeString(e.Data)
		if err != nil {
			continue
		}
		out = append(out, llm.Image{Data: data, MIMEType: e.MIME})
	}
	return out
}

// stripImages replaces each image entry's data with a note saying it is
// attached.
func stripImages(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || raw[0] != '[' || !bytes.Contains(raw, []byte(`"image"`)) {
		return raw
	}
	var entries []map[string]any
	if json.Unmarshal(raw, &entries) != nil {
		return raw
	}
	changed := false
	for _, e := range entries {
		if e["type"] == "image" {
			if d, ok := e["data"].(string); ok {
				e["data"] = fmt.Sprintf("(%d bytes of base64, attached to the request as an image)", len(d))
				changed = true
			}
		}
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return raw
	}
	return b
}

// stepImages are the images for the request now: the latest remembered
// step's result images, then this step's data collection's.
func stepImages(pc *Context) []llm.Image {
	var out []llm.Image
	if pc.memory != nil {
		if steps := pc.memory.Steps(); len(steps) > 0 {
			last := steps[len(steps)-1]
			cu := computerCalls(last)
			for i, r := range last.Results {
				if i < len(last.CallIDs) && cu != nil {
					if _, ok := cu[last.CallIDs[i]]; ok {
						continue // the computer call's result carries it
					}
				}
				out = append(out, ResultImages(r)...)
			}
		}
	}
	return append(out, pc.images...)
}

package langchain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// coalesceMax bounds a merged fragment's encoded size: langchaingo reads
// the stream with a bufio.Scanner, whose lines end at 64 KB.
const coalesceMax = 32 << 10

// coalesceToolInput merges the consecutive input_json_delta events of one
// tool_use block in an Anthropic event stream into fragments of up to
// coalesceMax bytes before langchaingo reads them. langchaingo appends each
// fragment to the input so far with a string concatenation, so a tool input
// of n bytes in fragments of a few bytes costs time in n²: a 1 MB file
// written by the model took 14 s of CPU. Merged, the copies are n²/32 KB.
// Tool input is not shown as it streams, so holding it back delays nothing
// a person sees; every other event passes through unchanged and at once.
func coalesceToolInput(body io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		err := coalesce(pw, body)
		pw.CloseWithError(err) // nil: io.EOF for the reader
	}()
	return &coalesced{PipeReader: pr, body: body}
}

type coalesced struct {
	*io.PipeReader
	body io.ReadCloser
}

// Close closes the upstream body too, which ends the copying goroutine.
func (c *coalesced) Close() error {
	c.PipeReader.Close()
	return c.body.Close()
}

// inputDelta is the part of a content_block_delta event read here.
type inputDelta struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
	Delta struct {
		Type        string          `json:"type"`
		PartialJSON json.RawMessage `json:"partial_json"`
	} `json:"delta"`
}

// coalesce copies the event stream from r to w, merging input deltas. Two
// JSON strings' bodies, still escaped, concatenate into the body of the
// string of both, so fragments are merged without decoding them.
func coalesce(w io.Writer, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		event   []byte // the raw lines of the event being read
		pending []byte // merged partial_json bodies, escaped, without quotes
		index   = -1   // the block pending belongs to
	)
	flush := func() error {
		if index < 0 {
			return nil
		}
		var b bytes.Buffer
		b.WriteString(`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":`)
		b.WriteString(strconv.Itoa(index))
		b.WriteString(`,"delta":{"type":"input_json_delta","partial_json":"`)
		b.Write(pending)
		b.WriteString("\"}}\n\n")
		pending, index = pending[:0], -1
		_, err := w.Write(b.Bytes())
		return err
	}
	for {
		line, err := br.ReadBytes('\n')
		event = append(event, line...)
		end := err != nil || len(bytes.TrimRight(line, "\r\n")) == 0
		if end && len(event) > 0 {
			if d, ok := parseInputDelta(event); ok {
				if index != d.Index || len(pending)+len(d.Delta.PartialJSON) > coalesceMax {
					if ferr := flush(); ferr != nil {
						return ferr
					}
				}
				index = d.Index
				pending = append(pending, d.Delta.PartialJSON[1:len(d.Delta.PartialJSON)-1]...)
			} else {
				if ferr := flush(); ferr != nil {
					return ferr
				}
				if _, werr := w.Write(event); werr != nil {
					return werr
				}
			}
			event = event[:0]
		}
		if err != nil {
			if ferr := flush(); ferr != nil {
				return ferr
			}
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// parseInputDelta reads an event that is an input_json_delta with a
// string fragment; any other event, or one it cannot read, is not.
func parseInputDelta(event []byte) (inputDelta, bool) {
	var d inputDelta
	if !bytes.Contains(event, []byte(`"input_json_delta"`)) {
		return d, false
	}
	for _, line := range bytes.Split(event, []byte("\n")) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		if json.Unmarshal(data, &d) != nil {
			return d, false
		}
		p := d.Delta.PartialJSON
		return d, d.Type == "content_block_delta" && d.Delta.Type == "input_json_delta" &&
			len(p) >= 2 && p[0] == '"' && p[len(p)-1] == '"'
	}
	return d, false
}

package trajectory

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"strings"
)

// ArtifactKey is the key of the object that stands in a line for a value
// moved into an artifact:
//
//	{"$artifact": "sha256:<hex>", "path": "artifacts/<hex>.png",
//	 "encoding": "base64", "media_type": "image/png", "size": 48213}
const ArtifactKey = "$artifact"

// Encodings say how an artifact's bytes stand for the value they replace.
const (
	// EncodingText: the value was a JSON string; the file holds its text.
	EncodingText = "text"
	// EncodingBase64: the value was a base64 string (image data); the file
	// holds the decoded bytes (a PNG, say).
	EncodingBase64 = "base64"
	// EncodingJSON: the value was any JSON (a tool's result payload); the
	// file holds that JSON.
	EncodingJSON = "json"
)

// Ref points from an event line to an artifact.
type Ref struct {
	Digest    string `json:"$artifact"`
	Path      string `json:"path"`
	Encoding  string `json:"encoding"`
	MediaType string `json:"media_type"`
	Size      int    `json:"size"`
}

// externalKeys are the fields whose large values move into artifacts:
// message text, image data, tool-call arguments, command parameters and
// result payloads. Only these may hold a Ref in a line (see the schema).
var externalKeys = map[string]bool{"content": true, "data": true, "arguments": true, "parameters": true, "result": true}

// store names artifacts by their content and hands each new one to the
// writer's queue once; the background writer puts them on disk before the
// line that refers to them.
type store struct {
	written map[string]bool
	// moved remembers each value moved out, by the digest of the value as
	// given (before redaction): a value that recurs (a command's result in
	// its dispatch and in its step) is redacted and hashed once, which
	// for megabytes of output is most of what recording costs.
	moved map[[sha256.Size]byte]Ref
	// queued are the artifacts of the line being encoded.
	queued []artifact
}

// once moves a value out the first time it is seen and returns the same
// Ref every later time.
func (s *store) once(kind string, raw []byte, move func() (Ref, error)) (Ref, error) {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(raw)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	if ref, ok := s.moved[key]; ok {
		return ref, nil
	}
	ref, err := move()
	if err != nil {
		return Ref{}, err
	}
	if s.moved == nil {
		s.moved = map[[sha256.Size]byte]Ref{}
	}
	s.moved[key] = ref
	return ref, nil
}

// artifact is one file to write under the trajectory directory.
type artifact struct {
	rel  string
	data []byte
}

func (s *store) put(data []byte, encoding, mediaType string) (Ref, error) {
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:])
	rel := filepath.ToSlash(filepath.Join(ArtifactsDir, h+extension(mediaType)))
	ref := Ref{Digest: "sha256:" + h, Path: rel, Encoding: encoding, MediaType: mediaType, Size: len(data)}
	if !s.written[rel] {
		s.written[rel] = true
		s.queued = append(s.queued, artifact{rel, data})
	}
	return ref, nil
}

// writeArtifact puts a on disk under dir, unless it is there already: in a
// temporary file renamed into place, so that a file under an artifact's
// name is always whole.
func writeArtifact(dir string, a artifact, made *bool) error {
	full := filepath.Join(dir, filepath.FromSlash(a.rel))
	if !*made {
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("trajectory: write artifact: %w", err)
		}
		*made = true
	}
	if _, err := os.Stat(full); err == nil {
		return nil
	}
	tmp := full + ".tmp"
	if err := os.WriteFile(tmp, a.data, 0o644); err != nil {
		return fmt.Errorf("trajectory: write artifact: %w", err)
	}
	if err := os.Rename(tmp, full); err != nil {
		return fmt.Errorf("trajectory: write artifact: %w", err)
	}
	return nil
}

func extension(mediaType string) string {
	switch base, _, _ := strings.Cut(mediaType, ";"); base {
	case "text/plain":
		return ".txt"
	case "application/json":
		return ".json"
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	default:
		if exts, _ := mime.ExtensionsByType(base); len(exts) > 0 {
			return exts[0]
		}
		return ".bin"
	}
}

// externalize replaces large values under externalKeys with Refs, writing
// their (redacted) content as artifacts.
func (w *Writer) externalize(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if externalKeys[k] {
				ref, ok, err := w.moveOut(k, val, x)
				if err != nil {
					return nil, err
				}
				if ok {
					x[k] = ref
					continue
				}
			}
			nv, err := w.externalize(val)
			if err != nil {
				return nil, err
			}
			x[k] = nv
		}
	case []any:
		for i, val := range x {
			nv, err := w.externalize(val)
			if err != nil {
				return nil, err
			}
			x[i] = nv
		}
	}
	return v, nil
}

// moveOut stores val as an artifact when it is large enough.
func (w *Writer) moveOut(key string, val any, parent map[string]any) (Ref, bool, error) {
	switch s := val.(type) {
	case string:
		if len(s) < w.threshold {
			return Ref{}, false, nil
		}
		if mt, _ := parent["mime_type"].(string); key == "data" && mt != "" {
			raw, err := base64.StdEncoding.DecodeString(s)
			if err == nil {
				ref, err := w.store.put(raw, EncodingBase64, mt)
				return ref, err == nil, err
			}
		}
		ref, err := w.store.once(EncodingText, []byte(s), func() (Ref, error) {
			return w.store.put([]byte(w.redactor.String(s)), EncodingText, "text/plain; charset=utf-8")
		})
		return ref, err == nil, err
	case map[string]any, []any:
		if key != "result" && key != "parameters" {
			return Ref{}, false, nil
		}
		b, err := json.Marshal(val)
		if err != nil || len(b) < w.threshold {
			return Ref{}, false, err
		}
		ref, err := w.store.once(EncodingJSON, b, func() (Ref, error) {
			return w.store.put(w.redactor.Bytes(b), EncodingJSON, "application/json")
		})
		return ref, err == nil, err
	}
	return Ref{}, false, nil
}

// resolver reads artifacts back for a reader, caching each by path.
type resolver struct {
	dir   string
	cache map[string]any
}

// internalize replaces every Ref in v with the value it stands for.
func (r *resolver) internalize(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if d, ok := x[ArtifactKey].(string); ok && d != "" {
			return r.load(x)
		}
		for k, val := range x {
			nv, err := r.internalize(val)
			if err != nil {
				return nil, err
			}
			x[k] = nv
		}
	case []any:
		for i, val := range x {
			nv, err := r.internalize(val)
			if err != nil {
				return nil, err
			}
			x[i] = nv
		}
	}
	return v, nil
}

func (r *resolver) load(m map[string]any) (any, error) {
	p, _ := m["path"].(string)
	enc, _ := m["encoding"].(string)
	digest, _ := m[ArtifactKey].(string)
	if v, ok := r.cache[p]; ok {
		return v, nil
	}
	if p == "" || strings.Contains(p, "..") || filepath.IsAbs(p) {
		return nil, fmt.Errorf("artifact %s has a bad path %q", digest, p)
	}
	data, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(p)))
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", digest, err)
	}
	sum := sha256.Sum256(data)
	if "sha256:"+hex.EncodeToString(sum[:]) != digest {
		return nil, fmt.Errorf("artifact %s: the file %s does not match its digest (was it edited?)", digest, p)
	}
	var v any
	switch enc {
	case EncodingText:
		v = string(data)
	case EncodingBase64:
		v = base64.StdEncoding.EncodeToString(data)
	case EncodingJSON:
		if v, err = decodeGeneric(data); err != nil {
			return nil, fmt.Errorf("artifact %s: %w", digest, err)
		}
	default:
		return nil, errors.New("artifact " + digest + ": unknown encoding " + enc)
	}
	if enc != EncodingJSON { // a JSON value may be changed by the caller's walk
		r.cache[p] = v
	}
	return v, nil
}

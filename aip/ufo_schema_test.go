package aip_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/command"
)

// ufoSchema compiles one of UFO's message schemas (testdata/aip/schema,
// generated from its pydantic models, which ignore fields they do not
// know).
func ufoSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(aipDir, "schema", name+".schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fitsSchema(t *testing.T, s *jsonschema.Schema, frame []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// Saucer's progress and background extensions ride on frame types UFO's
// peers already accept, as fields their models ignore: a progress report
// is a heartbeat (UFO's server acknowledges it), the background and
// progress requests are in a command frame's lifecycle (UFO's client runs
// the commands), a command left running answers with status none, one of
// UFO's result statuses. A new frame type would not be ignored: UFO's
// server answers a type it does not know with an error frame (its model
// refuses the value), which is why none is used.
func TestExtensionsFitUFOSchemas(t *testing.T) {
	client, server := ufoSchema(t, "ClientMessage"), ufoSchema(t, "ServerMessage")

	hb, err := aip.DecodeClient(readFrame(t, "c2s_heartbeat.json"))
	if err != nil {
		t.Fatal(err)
	}
	hb.Progress = &aip.Progress{ResponseID: "r", CallID: "c", State: string(command.StateRunning), ElapsedMS: 900,
		Progress: 12, Message: "line 11\nline 12"}
	b, err := hb.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fitsSchema(t, client, b); err != nil {
		t.Errorf("a progress heartbeat does not fit UFO's ClientMessage: %v\n%s", err, b)
	}
	hb.Progress, hb.Metadata = nil, map[string]any{aip.MetaToolsVersion: uint64(7)}
	if b, err = hb.Append(nil); err != nil {
		t.Fatal(err)
	}
	if err := fitsSchema(t, client, b); err != nil || !bytes.Contains(b, []byte(`"tools_version":7`)) {
		t.Errorf("a heartbeat saying the tools changed does not fit UFO's ClientMessage: %v\n%s", err, b)
	}
	if v, ok := aip.ToolsVersionOf(mustDecodeClient(t, b).Metadata); !ok || v != 7 {
		t.Errorf("tools_version read back as %d, %v", v, ok)
	}

	cmd, err := aip.DecodeServer(readFrame(t, "s2c_command.json"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Lifecycle = &aip.Lifecycle{CreatedAt: time.Now(), DetachAfter: 30 * time.Second, Progress: true}
	if b, err = cmd.Append(nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"detach_after_ms":30000`)) {
		t.Fatalf("no background request in %s", b)
	}
	if err := fitsSchema(t, server, b); err != nil {
		t.Errorf("a command frame with a lifecycle does not fit UFO's ServerMessage: %v\n%s", err, b)
	}

	res, err := aip.DecodeClient(readFrame(t, "c2s_command_results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res.ActionResults[0] = command.Running(command.Status{CallID: res.ActionResults[0].CallID, Tool: "run", State: command.StateRunning})
	if b, err = res.Append(nil); err != nil {
		t.Fatal(err)
	}
	if err := fitsSchema(t, client, b); err != nil {
		t.Errorf("a result of a command left running does not fit UFO's ClientMessage: %v\n%s", err, b)
	}

	// The control: a frame type of its own is refused by UFO's model.
	own := bytes.Replace(readFrame(t, "c2s_heartbeat.json"), []byte(`"heartbeat"`), []byte(`"progress"`), 1)
	if err := fitsSchema(t, client, own); err == nil || !strings.Contains(err.Error(), "type") {
		t.Errorf("UFO's schema takes a frame type it does not define: %v", err)
	}
}

func readFrame(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(aipDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecodeClient(t *testing.T, b []byte) *aip.ClientMessage {
	t.Helper()
	m, err := aip.DecodeClient(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

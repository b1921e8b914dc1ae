package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/server"
)

// TestAuthBeforeUpgrade: a missing key gets 401 and a wrong one 403, as
// plain HTTP answers before any upgrade; the key works as ?token= and as
// X-API-Key, on /ws and on the API; health needs no key.
func TestAuthBeforeUpgrade(t *testing.T) {
	f := newFixture(t, server.Options{})
	ctx := context.Background()
	tests := []struct {
		name   string
		query  string
		header string
		want   int
	}{
		{"no key", "", "", http.StatusUnauthorized},
		{"wrong query key", "?token=nope", "", http.StatusForbidden},
		{"wrong header key", "", "nope", http.StatusForbidden},
		{"query key", "?token=" + token, "", http.StatusSwitchingProtocols},
		{"header key", "", token, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.header != "" {
				h.Set("X-API-Key", tt.header)
			}
			ws, resp, err := websocket.Dial(ctx, f.wsURL+tt.query, &websocket.DialOptions{HTTPHeader: h})
			if ws != nil {
				ws.CloseNow()
			}
			if resp == nil {
				t.Fatalf("no HTTP response: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	resp, err := http.Get(f.http.URL + "/api/clients")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("API without key: %d", resp.StatusCode)
	}
	var h server.Health
	if resp, err := http.Get(f.http.URL + "/api/health"); err != nil || resp.StatusCode != 200 {
		t.Errorf("health: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	f.api(t, "GET", "/api/health", nil, &h)
	if h.Status != "ok" {
		t.Errorf("health %+v", h)
	}
}

// TestRegistration: success is heartbeat/ok; the first frame must be
// register; a live duplicate id is refused and closed; a constellation
// needs its target connected.
func TestRegistration(t *testing.T) {
	f := newFixture(t, server.Options{})
	c := f.rawConn(t)
	if ok := register(t, c, "dev"); ok.Type != aip.TypeHeartbeat || ok.Status != aip.StatusOK || ok.ResponseID == "" {
		t.Fatalf("registration answer %v", ok)
	}

	dup := f.rawConn(t)
	m := register(t, dup, "dev")
	if m.Type != aip.TypeError || !strings.Contains(m.Error, "client_id 'dev' is already registered") {
		t.Errorf("duplicate got %v %q", m, m.Error)
	}
	expectClosed(t, dup)

	first := f.rawConn(t)
	send(t, first, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: "x"})
	if m := readServer(t, first); m.Type != aip.TypeError || !strings.Contains(m.Error, "first frame must be register") {
		t.Errorf("heartbeat first got %v %q", m, m.Error)
	}
	expectClosed(t, first)

	cons := f.rawConn(t)
	send(t, cons, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
		ClientID: "task1@ghost", TargetID: "ghost"})
	if m := readServer(t, cons); m.Type != aip.TypeError || m.Error != "Target device 'ghost' is not connected" {
		t.Errorf("constellation got %v %q", m, m.Error)
	}
	cons2 := f.rawConn(t)
	send(t, cons2, &aip.ClientMessage{Type: aip.TypeRegister, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
		ClientID: "task1@dev", TargetID: "dev"})
	if m := readServer(t, cons2); m.Status != aip.StatusOK {
		t.Errorf("constellation for a connected device got %v %q", m, m.Error)
	}
	// The constellation can ask about its device.
	send(t, cons2, &aip.ClientMessage{Type: aip.TypeDeviceInfoRequest, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
		ClientID: "task1@dev", TargetID: "dev", RequestID: "req-1"})
	if m := readServer(t, cons2); m.Type != aip.TypeDeviceInfoResponse || m.ResponseID != "req-1" || !strings.Contains(string(m.Result), `"hostname":"h"`) {
		t.Errorf("device info %v %s", m, m.Result)
	}
	// ... and about no other device, nor start tasks on one.
	other := f.rawConn(t)
	register(t, other, "other")
	send(t, cons2, &aip.ClientMessage{Type: aip.TypeDeviceInfoRequest, Status: aip.StatusOK, ClientType: aip.ClientConstellation,
		ClientID: "task1@dev", TargetID: "other", RequestID: "req-2"})
	if m := readServer(t, cons2); m.Type != aip.TypeError || !strings.Contains(m.Error, "registered for device 'dev' and may not ask about 'other'") {
		t.Errorf("device info of another device: %v %q", m, m.Error)
	}
	send(t, cons2, &aip.ClientMessage{Type: aip.TypeTask, Status: aip.StatusContinue, ClientType: aip.ClientConstellation,
		ClientID: "task1@dev", TargetID: "other", Request: "rm -rf /", TaskName: "t"})
	if m := readServer(t, cons2); m.Type != aip.TypeError || !strings.Contains(m.Error, "may not start tasks on 'other'") {
		t.Errorf("a task on another device: %v %q", m, m.Error)
	}
	// A device may not ask for device information at all (UFO: constellations only).
	send(t, other, &aip.ClientMessage{Type: aip.TypeDeviceInfoRequest, Status: aip.StatusOK, ClientID: "other", RequestID: "req-3"})
	if m := readServer(t, other); m.Type != aip.TypeError || !strings.Contains(m.Error, "constellation clients only") {
		t.Errorf("a device's device_info_request: %v %q", m, m.Error)
	}
}

func expectClosed(t *testing.T, c *aip.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, _, err := c.Read(ctx); err == nil {
		t.Error("the connection stayed open")
	} else if ctx.Err() != nil {
		t.Error("the server did not close the connection")
	}
}

// TestBadFrames: every kind of bad frame gets an error reply (or, when
// oversized, a close) and the server keeps serving the same and other
// clients.
func TestBadFrames(t *testing.T) {
	f := newFixture(t, server.Options{Conn: aip.ConnOptions{ReadLimit: 64 << 10}})
	other := f.rawConn(t)
	register(t, other, "other")

	c := f.rawConn(t)
	register(t, c, "dev")
	tests := []struct {
		name  string
		frame string
		want  string
	}{
		{"not JSON", `this is not json`, "not a JSON object"},
		{"broken JSON", `{"type":"heartbeat"`, "not valid JSON"},
		{"unknown type", `{"type":"launch_rockets","status":"ok","client_id":"dev"}`, `unknown client message type "launch_rockets"`},
		{"register again", `{"type":"register","status":"ok","client_id":"dev"}`, "already registered"},
		{"spoofed client_id", `{"type":"heartbeat","status":"ok","client_id":"other"}`, "client_id does not match the registered connection"},
		{"spoofed client_type", `{"type":"heartbeat","status":"ok","client_id":"dev","client_type":"constellation"}`, "client_type does not match"},
		{"targets another device", `{"type":"task","status":"continue","client_id":"dev","target_id":"other","request":"x"}`, "may not target another device"},
		{"results for an unknown round", `{"type":"command_results","status":"continue","client_id":"dev","prev_response_id":"no-such-round","action_results":[]}`, "no-such-round"},
		{"results without prev id", `{"type":"command_results","status":"continue","client_id":"dev","action_results":[]}`, "prev_response_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.SendRaw(context.Background(), []byte(tt.frame)); err != nil {
				t.Fatal(err)
			}
			m := readServer(t, c)
			if m.Type != aip.TypeError || m.Status != aip.StatusError || !strings.Contains(m.Error, tt.want) {
				t.Errorf("reply %v %q, want an error mentioning %q", m, m.Error, tt.want)
			}
		})
	}
	// Still served: a heartbeat gets its ack.
	send(t, c, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: "dev"})
	if m := readServer(t, c); m.Type != aip.TypeHeartbeat || m.Status != aip.StatusOK {
		t.Errorf("after bad frames: %v", m)
	}
	// UFO's client sends error frames without status: accepted, and (as
	// UFO's server does) answered with an error frame of its own.
	c.SendRaw(context.Background(), []byte(`{"type":"error","client_id":"dev","error":"client trouble"}`))
	if m := readServer(t, c); m.Type != aip.TypeError || !strings.Contains(m.Error, "error received: client trouble") {
		t.Errorf("an error frame was answered with %v %q", m, m.Error)
	}
	send(t, c, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: "dev"})
	if m := readServer(t, c); m.Type != aip.TypeHeartbeat {
		t.Errorf("after an error frame: %v %q", m, m.Error)
	}
	// Oversized: the connection is closed with 1009 ...
	big := `{"type":"heartbeat","status":"ok","error":"` + strings.Repeat("x", 100<<10) + `"}`
	c.SendRaw(context.Background(), []byte(big))
	_, _, err := c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("oversized frame: %v, want close 1009", err)
	}
	// ... and the other client is still served.
	send(t, other, &aip.ClientMessage{Type: aip.TypeHeartbeat, Status: aip.StatusOK, ClientID: "other"})
	if m := readServer(t, other); m.Type != aip.TypeHeartbeat {
		t.Errorf("other client after the bad one: %v", m)
	}
	// A new connection can still register.
	if m := register(t, f.rawConn(t), "third"); m.Status != aip.StatusOK {
		t.Errorf("new registration after bad frames: %v", m)
	}
}

// TestLiveness: a registered peer that stops answering pings is dropped by
// the server itself.
func TestLiveness(t *testing.T) {
	f := newFixture(t, server.Options{Conn: aip.ConnOptions{PingInterval: 20 * time.Millisecond, DeadAfter: 100 * time.Millisecond}})
	ctx := context.Background()
	ws, _, err := websocket.Dial(ctx, f.wsURL+"?token="+token, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.Write(ctx, websocket.MessageText, []byte(`{"type":"register","status":"ok","client_type":"device","client_id":"mute"}`))
	// Registered: the ack is read ...
	if _, b, err := ws.Read(ctx); err != nil || !strings.Contains(string(b), `"status":"ok"`) {
		t.Fatalf("registration: %s %v", b, err)
	}
	if cs := f.srv.Clients(); len(cs) != 1 || cs[0].ClientID != "mute" || cs[0].Status != "connected" {
		t.Fatalf("after its ack the device is not connected: %+v", cs)
	}
	// ... and nothing more: pings go unanswered, and the server drops it.
	f.logs.waitFor(t, 1, "device mute disconnected", "no frame or pong for")
	if cs := f.srv.Clients(); len(cs) != 0 {
		t.Errorf("a silent device is still registered: %+v", cs)
	}
}

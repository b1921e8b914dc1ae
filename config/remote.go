package config

import (
	"fmt"
	"strings"
)

// Remote configures remote mode: `saucer serve` (the agent server) and
// `saucer client` (a device connected to it over AIP). The API key is not
// part of the file: give it with --token or SAUCER_TOKEN.
type Remote struct {
	// Addr is where `saucer serve` listens.
	Addr string `yaml:"addr"`
	// Server is the WebSocket URL `saucer client` connects to.
	Server string `yaml:"server"`
	// ClientID names the device on the server (default: the host name).
	ClientID string `yaml:"client_id"`
	// KeyLabel names who holds the server's API key ("ops", "dana"): the
	// tasks, answers, approvals and cancels made with it are recorded
	// under that name (default: api-key: and the start of its hash).
	KeyLabel string `yaml:"key_label"`
	// Labels are what the device says of itself to the server (gpu,
	// office, eu): constellation nodes that require a label run only on
	// devices that have it.
	Labels []string `yaml:"labels"`
	// TLSCert and TLSKey make `saucer serve` speak wss:// and https://.
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// CACert is a PEM file of the CA `saucer client` trusts for wss://
	// (default: the system's roots).
	CACert string `yaml:"ca_cert"`
	// ReadLimit is the largest frame accepted, in bytes.
	ReadLimit int64 `yaml:"read_limit"`
	// PingInterval and DeadAfter: WebSocket pings, and the silence after
	// which a peer is dropped.
	PingInterval Duration `yaml:"ping_interval"`
	DeadAfter    Duration `yaml:"dead_after"`
	// Heartbeat is how often a device sends an AIP heartbeat.
	Heartbeat Duration `yaml:"heartbeat"`
	// MaxBackoff caps the wait between a device's reconnection attempts.
	MaxBackoff Duration `yaml:"max_backoff"`
	// RegisterTimeout bounds a device's wait for the server's answer to
	// its registration (the connection attempt included). With
	// MaxBackoff, it is the longest a device takes to register again once
	// the server can be reached, which it tells the server: the server
	// waits that long beyond AwayTimeout before it gives up on it.
	RegisterTimeout Duration `yaml:"register_timeout"`
	// AskTimeout is how long an agent's question or approval waits for an
	// answer through the API before it takes its default.
	AskTimeout Duration `yaml:"ask_timeout"`
	// AwayTimeout is how long the server waits for a disconnected device
	// that has commands in flight before failing them, beyond the
	// reconnection wait the device declares (a Saucer device: its
	// max_backoff plus its register_timeout), so that an outage shorter
	// than AwayTimeout never fails them.
	AwayTimeout Duration `yaml:"away_timeout"`
	// CommandTTL is how long a queued command may wait before it expires
	// and is not run (0: its round's deadline, agent.command_timeout per
	// command).
	CommandTTL Duration `yaml:"command_ttl"`
	// MaxTasks and MaxTasksPerDevice bound concurrent tasks; MaxDevices
	// bounds registered devices (0: no bound).
	MaxTasks          int `yaml:"max_tasks"`
	MaxTasksPerDevice int `yaml:"max_tasks_per_device"`
	MaxDevices        int `yaml:"max_devices"`
	// DeviceAgents names, by client id, the agent of a UFO device
	// client's mcp.yaml that runs Saucer's commands (the agent_name of
	// its command frames), where the default by platform is wrong.
	DeviceAgents map[string]string `yaml:"device_agents"`
	// Store is where `saucer serve` keeps tasks, their journals and the
	// device registry: "sqlite:PATH", "postgres://..." or "memory"; empty
	// means sqlite:RUNS/saucer-server.db (RUNS: the record directory).
	Store string `yaml:"store"`
}

// CheckStore says what is wrong with a store spec, if anything.
func CheckStore(spec string) error {
	switch {
	case spec == "", spec == "memory":
		return nil
	case strings.HasPrefix(spec, "sqlite:"):
		if strings.TrimPrefix(spec, "sqlite:") == "" {
			return fmt.Errorf("remote.store %q names no file: write sqlite:PATH", spec)
		}
		return nil
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return nil
	}
	shown := spec
	if i := strings.Index(spec, "@"); i >= 0 {
		shown = "…" + spec[i:] // no password in the message
	}
	return fmt.Errorf("remote.store %q is not a store: use sqlite:PATH, postgres://USER@HOST:PORT/DB or memory", shown)
}

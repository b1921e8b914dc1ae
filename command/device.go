package command

// DeviceInfo describes the device a client runs on. The JSON names are those
// of UFO's registration metadata (system_info), so the same value serves the
// agents' prompts and AIP registration; Saucer adds where the tools run
// (user, uid, home, workdir), optional fields a UFO peer does without.
type DeviceInfo struct {
	DeviceID      string   `json:"device_id,omitempty"`
	Platform      string   `json:"platform"`
	OSVersion     string   `json:"os_version,omitempty"`
	Arch          string   `json:"arch,omitempty"`
	CPUCount      int      `json:"cpu_count"`
	CPUModel      string   `json:"cpu_model,omitempty"`
	MemoryTotalGB float64  `json:"memory_total_gb"`
	Hostname      string   `json:"hostname"`
	IPAddress     string   `json:"ip_address,omitempty"`
	Features      []string `json:"supported_features"`
	PlatformType  string   `json:"platform_type,omitempty"`
	SchemaVersion string   `json:"schema_version,omitempty"`
	// Custom holds anything else a deployment wants the agents to know.
	Custom map[string]any `json:"custom_metadata,omitempty"`

	// User and UID are who the tools run as (UID as the system spells
	// it: a number on Unix, a SID on Windows), Home that user's home
	// folder (what ~ means to the shell) and WorkDir the folder the shell
	// starts in and the files tools take relative paths from, all as the
	// tools see them (inside a sandbox, the sandbox's). UFO's clients
	// send none of them: the agents are told only what is known.
	User    string `json:"user,omitempty"`
	UID     string `json:"uid,omitempty"`
	Home    string `json:"home,omitempty"`
	WorkDir string `json:"workdir,omitempty"`
	// Sandbox, when set, names the root image of the sandbox the tools
	// run in (sandbox.Sandbox.Image); empty, they run on the host. A
	// constellation moves a node planned on a sandboxed device only to a
	// device with the same sandbox image, never to the host.
	Sandbox string `json:"sandbox,omitempty"`
	// Labels are what the deployment says of the device (gpu, office,
	// eu), for the nodes that require them.
	Labels []string `json:"labels,omitempty"`
}

// Names of the commands every Saucer device client answers itself, without
// an MCP server behind them.
const (
	// GetMCPTools lists tool infos; parameters {namespace?, tool_type?}.
	GetMCPTools = "get_mcp_tools"
	// ListTools is UFO's name for the same discovery; parameters {tool_type?}.
	ListTools = "list_tools"
	// GetDeviceInfo returns the DeviceInfo.
	GetDeviceInfo = "get_device_info"
)

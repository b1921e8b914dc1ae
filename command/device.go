package command

// DeviceInfo describes the device a client runs on. The JSON names are those
// of UFO's registration metadata (system_info), so the same value serves the
// host agent's prompt and AIP registration.
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

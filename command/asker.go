package command

import "context"

type agentKey struct{}

// Names of the agents that ask for commands, as UFO's device client knows
// them (the agent_name of a command frame picks the MCP servers of its
// mcp.yaml entry that run the frame).
const (
	HostAgentName = "HostAgent"
	AppAgentName  = "AppAgent"
)

// WithAgent returns a context under which commands are asked for by the
// agent named name (HostAgentName, AppAgentName): a dispatcher that talks
// to a device puts it in the command frame.
func WithAgent(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, agentKey{}, name)
}

// AgentFrom returns the name set by WithAgent, or "".
func AgentFrom(ctx context.Context) string {
	name, _ := ctx.Value(agentKey{}).(string)
	return name
}

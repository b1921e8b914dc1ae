package client

import "github.com/mark3labs/mcp-go/server"

// ResponseID exposes responseID to the external tests.
var ResponseID = responseID

// Foreign returns s serving the mcp-go server ms in-process as it is, for
// tests that play a misbehaving third-party server without a process.
func Foreign(s Server, ms *server.MCPServer) Server {
	s.foreign = ms
	return s
}

// ThroughMCP returns s calling its Go tools (s.MCP) through mcp-go's
// in-process transport, as every call did before the direct call, for the
// tests that hold the two to the same results.
func ThroughMCP(s Server) Server {
	s.viaMCP = true
	return s
}

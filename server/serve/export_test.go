package serve

import "net/http"

// HTTPServer is the HTTP server a Server serves with.
func HTTPServer(s *Server) *http.Server { return s.hs }

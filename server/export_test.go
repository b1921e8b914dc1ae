package server

// CommandProgress feeds the progress hook, as a device's progress will.
func (s *Server) CommandProgress(clientID string, p ProgressInfo) error {
	return s.commandProgress(clientID, p)
}

// DropConnection closes a device's connection, as a network failure
// would: the device client reconnects.
func (s *Server) DropConnection(clientID string) {
	s.mu.Lock()
	var c interface{ CloseNow() error }
	if d := s.devices[clientID]; d != nil && d.conn != nil {
		c = d.conn
	}
	s.mu.Unlock()
	if c != nil {
		c.CloseNow()
	}
}

package server

// CommandProgress feeds the progress hook, as a device's progress will.
func (s *Server) CommandProgress(clientID string, p ProgressInfo) error {
	return s.commandProgress(clientID, p)
}

package command

// State is a command's place in its lifecycle, as a server records it
// (Saucer's addition to AIP: UFO's server keeps none).
type State string

// The lifecycle: pending (queued, sent or not), running (the device said it
// started), then one of completed, failed, cancelled, expired (its time to
// start passed while it waited for its device) or unknown (the device
// disconnected while the command may have been running, and cannot say how
// it ended: a device that runs a command frame it gets again is not sent
// it again).
const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
	StateExpired   State = "expired"
	StateUnknown   State = "unknown"
)

// Terminal reports whether the state is final.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateCancelled, StateExpired, StateUnknown:
		return true
	}
	return false
}

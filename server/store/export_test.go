package store

import "time"

// SetCheckpointDelay changes how long writes stay only in the task log
// (for a test that needs them there when its process dies).
func SetCheckpointDelay(d time.Duration) { checkpointDelay = d }

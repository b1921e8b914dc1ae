package store

// OnCheckpoint has f told of every checkpoint of an SQLite store, until
// restore is called.
func OnCheckpoint(f func(error)) (restore func()) {
	checkpointed.Store(&f)
	return func() { checkpointed.Store(nil) }
}

package remote

// WatchCounts says how often c's read watches set their timer and how
// often it went off (see readWatch).
func WatchCounts(c *Client) (arms, fires uint64) { return c.watchArms.Load(), c.watchFires.Load() }

package langchain

// Exported for the tests in package langchain_test, which share the
// recorded Anthropic streams.
var (
	Coalesce          = coalesce
	CoalesceToolInput = coalesceToolInput
)

const CoalesceMax = coalesceMax

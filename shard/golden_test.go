package shard_test

// Pinned by TestAssignDeterministic: owners of shards 0, 1, 2, 3, 100, 255
// and the shard counts of replica-0..2 with 256 shards.
var (
	goldenOwners = []string{"replica-0", "replica-2", "replica-0", "replica-1", "replica-1", "replica-2"}
	goldenCounts = []int{73, 85, 98}
)

package shard_test

import (
	"fmt"

	"github.com/ginformer/ginformer/shard"
)

// Three members share 256 shards; a fourth joins and takes only its own.
func ExampleAssign() {
	a, err := shard.Assign(0, []string{"replica-0", "replica-1", "replica-2"})
	if err != nil {
		panic(err)
	}
	for m, s := range a.All() {
		fmt.Println(m, s.Len(), "shards")
	}
	b, _ := shard.Assign(0, []string{"replica-0", "replica-1", "replica-2", "replica-3"})
	moved, toNew := 0, 0
	for i := range 256 {
		if a.Owner(i) != b.Owner(i) {
			moved++
			if b.Owner(i) == "replica-3" {
				toNew++
			}
		}
	}
	fmt.Println("a join moves", moved, "shards,", toNew, "of them to the newcomer")
	fmt.Println("owner of key jobs/42:", b.OwnerOf(shard.HashKey("jobs/42")))
	// Output:
	// replica-0 73 shards
	// replica-1 85 shards
	// replica-2 98 shards
	// a join moves 67 shards, 67 of them to the newcomer
	// owner of key jobs/42: replica-1
}

// A member's shards as a Kubernetes ShardSelector (KEP-5866).
func ExampleSet_Selector() {
	s, err := shard.NewSet(4, 0, 1, 3)
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	fmt.Println(s.Selector(shard.FieldUID))
	// Output:
	// 0-1,3
	// shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')
}

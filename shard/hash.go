package shard

// FNV-1a, 64 bits: the hash the Kubernetes apiserver's sharded list and
// watch (KEP-5866) applies to an object's uid or namespace. The same
// function here lets a replica's ranges be sent to the apiserver as a
// selector and checked locally with the same result.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// Hash returns the 64-bit FNV-1a hash of s, without allocating. It equals
// hash/fnv's New64a over []byte(s). Use it on the field the apiserver
// hashes (metadata.uid or metadata.namespace), or on the etcd key.
func Hash(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// HashBytes is [Hash] over a byte slice.
func HashBytes(b []byte) uint64 {
	h := uint64(fnvOffset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime64
	}
	return h
}

// mix64 is splitmix64's finalizer: a bijection of uint64 with good
// avalanche, used to derive rendezvous weights.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// HashKey is [Hash] followed by a 64-bit finalizer (splitmix64's), for keys
// the client hashes itself (etcd keys). FNV-1a alone spreads keys that
// differ only in their last characters (web-1, web-2, …) poorly over the
// high bits, which pick the shard: 3000 keys "k0000".."k2999" fill only a
// quarter of 256 shards with FNV-1a, and all of them evenly with HashKey.
// Use plain [Hash] where the apiserver hashes (uid, namespace): the
// client must agree with it.
func HashKey(key string) uint64 { return mix64(Hash(key)) }

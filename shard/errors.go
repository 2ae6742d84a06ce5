package shard

import "errors"

// Sentinel errors. Errors the package returns wrap these with %w; test them
// with [errors.Is].
var (
	// ErrInvalidShards: a shard count outside [1, MaxShards], a shard
	// outside its space, or a malformed [Set] string.
	ErrInvalidShards = errors.New("shard: invalid shards")

	// ErrInvalidOptions is wrapped by constructors whose Options fail
	// validation.
	ErrInvalidOptions = errors.New("shard: invalid options")

	// ErrConflict is returned by [Membership.Claim] when the membership
	// changed since the view the claim was based on (or this member's
	// registration is no longer the view's): the claim was not recorded.
	// Retry from a newer view.
	ErrConflict = errors.New("shard: membership changed since the view")

	// ErrNotRegistered is returned by [Membership.Claim] when this member
	// has no live registration (its lease expired or was never granted).
	ErrNotRegistered = errors.New("shard: member not registered")
)

// ErrAlreadyStarted is returned by [Owner.Run] on an owner that has already
// been started: each runs once.
var ErrAlreadyStarted = errors.New("shard: already started")

// Package informer is the engine of ginformer: typed building blocks that
// keep a local, indexed cache of a remote versioned collection and tell code
// what changed.
//
// The data flows one way:
//
//	source → Reflector → DeltaFIFO → processing loop → Indexer → handlers
//
// This package holds the typed store with secondary indexes ([Indexer]), the
// queue of per-key changes between a reflector and its consumer
// ([DeltaFIFO]), and the contracts between them. Everything is generic over
// the object type T and its key type K; no exported API takes or returns
// interface{} and users never write a type assertion.
//
// Data structures in this package do not log; they return errors that wrap
// the sentinels in errors.go.
package informer

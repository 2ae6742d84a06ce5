// Package wire reads the Kubernetes API's responses for the k8s source:
// it splits protobuf envelopes, lists and watch frames and JSON lists into
// the raw bytes of each object without decoding them, and decodes an
// object's protobuf or JSON bytes by a plan of its Go type, sharing what
// objects repeat. It holds every use of package unsafe in the source.
//
// The surface is small:
//
//   - splitting: [Unwrap], [SplitList], [SplitWatchEvent], [SplitJSONList],
//     [Meta], [Identity], [WithoutManagedFields], [FrameReader]; each
//     returns [ErrMalformed] (wrapped) for bytes that do not parse, and
//     never reads or writes outside its input;
//   - decoding: [Plan] (and [PlanProblem] for a type without one) for
//     protobuf; [JSONPlan] for JSON, with the semantics of
//     sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts, which decodes
//     what the plan does not describe (see jsonplan.go);
//   - sharing: [ShareStrings] and [Intern] for objects decoded elsewhere;
//     the tables' budget, held by a [Lease] per user ([Acquire]), and their
//     figures ([ReadStats]);
//   - relists: [Known], what a source delivered, by key and version
//     ([Identity], [JSONIdentity] read them from an object's bytes).
//
// # Contract
//
// Bytes from the network are not trusted: malformed, truncated or hostile
// input gives an error, never a panic or a write outside the value being
// decoded (FuzzPBDecode and FuzzJSONDecode check it). Nothing decoded aliases its input:
// strings and bytes are copied out, so a caller may reuse its buffers.
//
// # Sharing, and the mutation hazard
//
// A plan made with share set shares between the objects it decodes the
// strings they repeat and the spec subtrees they repeat byte for byte: a
// field of an object's spec that is a pointer to a message (a probe, a
// security context), a repeated message (a container's env, ports or
// volume mounts, the tolerations) or a map of messages (a container's
// resource requests and limits); and in the object's own metadata, the
// labels, annotations and owner references. The pods of one Deployment then
// hold one copy of each. Shared values are read-only, as every cached object is: a
// program that mutates one pod's resource limits in place mutates every pod
// that shares them. DeepCopy an object before changing it (the informer's
// contract already says so), or decode without sharing subtrees
// ([PlanOptions].ShareSubtrees false: strings, immutable, can still be
// shared).
//
// The sharing tables are the process's, within one memory budget: the
// largest of the live leases' ([DefaultBudget] without any). They are
// emptied when the last lease is released.
package wire

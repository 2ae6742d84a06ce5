// Package sourcekit holds what the key-value sources (source/etcd,
// source/natskv) share: lifting index functions of values to their object
// wrappers, matching client errors against sentinel lists, and the defaults
// of their common options. Sources must not import each other; each imports
// this package instead. It imports informer and nothing else of ginformer's.
// (Their snapshot codecs read fields with internal/fields, the reader the
// engine's value codec uses too.)
package sourcekit

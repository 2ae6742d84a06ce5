package informer

import "time"

// appliedVersion is replaced by the version tracker (merge pending).
func (inf *SharedInformer[K, T]) appliedVersion() (string, time.Time) { return "", time.Time{} }

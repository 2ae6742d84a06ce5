package k8s

// Classify exposes classify to the external tests.
var Classify = classify

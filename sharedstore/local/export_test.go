package local

// MaxPendingRefunds is the bound on buckets with a pending refund, for the
// tests that fill it.
const MaxPendingRefunds = maxPendingRefunds

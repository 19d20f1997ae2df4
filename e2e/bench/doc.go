// Package bench measures what the tokenbudget filter costs a proxy: each
// figure is a ratio against a baseline measured in the same run (the
// pass-through module in the same wazero host, the same request without the
// extra limits, the estimator natively), never an absolute timed assertion.
// Everything lives in _test.go files; `make bench` runs it and BENCHMARKS.md
// records the figures with the commands that produced them.
package bench

// Package errs wraps errors with context without importing fmt, which the
// .wasm module keeps out of its own code (docs/envoy-wasi.md).
package errs

// Wrap returns an error reading "context: err" that unwraps to err, or nil
// when err is nil.
func Wrap(context string, err error) error {
	if err == nil {
		return nil
	}
	return &wrapped{context: context, err: err}
}

// New returns a plain error with the given text.
func New(text string) error { return &wrapped{context: text} }

type wrapped struct {
	context string
	err     error
}

func (w *wrapped) Error() string {
	if w.err == nil {
		return w.context
	}
	return w.context + ": " + w.err.Error()
}

func (w *wrapped) Unwrap() error { return w.err }

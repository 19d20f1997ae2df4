package abi

import (
	"errors"
	"strconv"
	"strings"

	"github.com/tetratelabs/proxy-wasm-go-sdk/proxywasm/types"
)

// Status is the host's answer to a host call. The values are the ABI's, so a
// Status can be compared with what Envoy documents.
type Status uint32

// Status values (ABI v0.2.1). 5 and 9 are unassigned.
const (
	StatusOK                   Status = 0
	StatusNotFound             Status = 1
	StatusBadArgument          Status = 2
	StatusSerializationFailure Status = 3
	StatusParseFailure         Status = 4
	StatusInvalidMemoryAccess  Status = 6
	StatusEmpty                Status = 7
	StatusCasMismatch          Status = 8
	StatusInternalFailure      Status = 10
	StatusBrokenConnection     Status = 11
	StatusUnimplemented        Status = 12
)

var statusNames = [...]string{
	StatusOK: "ok", StatusNotFound: "not found", StatusBadArgument: "bad argument",
	StatusSerializationFailure: "serialization failure", StatusParseFailure: "parse failure",
	StatusInvalidMemoryAccess: "invalid memory access", StatusEmpty: "empty",
	StatusCasMismatch: "cas mismatch", StatusInternalFailure: "internal failure",
	StatusBrokenConnection: "broken connection", StatusUnimplemented: "unimplemented",
}

// Err is the status as the SDK's proxywasm functions return it: nil for
// StatusOK, the SDK's error value (types.ErrorStatusNotFound, ...) where it
// has one, else an error naming the status. errors.Is against the SDK's
// values works on what it returns.
func (s Status) Err() error {
	switch s {
	case StatusOK:
		return nil
	case StatusNotFound:
		return types.ErrorStatusNotFound
	case StatusBadArgument:
		return types.ErrorStatusBadArgument
	case StatusEmpty:
		return types.ErrorStatusEmpty
	case StatusCasMismatch:
		return types.ErrorStatusCasMismatch
	case StatusInternalFailure:
		return types.ErrorInternalFailure
	case StatusUnimplemented:
		return types.ErrorUnimplemented
	}
	return statusError(s)
}

// statusError is a status the SDK has no error value for.
type statusError Status

func (e statusError) Error() string { return "error status returned by host: " + Status(e).String() }

// StatusOf is the inverse of Err: the status an error from the SDK's
// proxywasm functions stands for. An error that names no status (the SDK
// refusing an argument before any host call, such as an empty property
// value) is StatusBadArgument.
func StatusOf(err error) Status {
	var se statusError
	switch {
	case err == nil:
		return StatusOK
	case errors.Is(err, types.ErrorStatusNotFound):
		return StatusNotFound
	case errors.Is(err, types.ErrorStatusBadArgument):
		return StatusBadArgument
	case errors.Is(err, types.ErrorStatusEmpty):
		return StatusEmpty
	case errors.Is(err, types.ErrorStatusCasMismatch):
		return StatusCasMismatch
	case errors.Is(err, types.ErrorInternalFailure):
		return StatusInternalFailure
	case errors.Is(err, types.ErrorUnimplemented):
		return StatusUnimplemented
	case errors.As(err, &se):
		return Status(se)
	}
	// The SDK spells a status it has no value for as "unknown status code: N".
	if n, ok := strings.CutPrefix(err.Error(), "unknown status code: "); ok {
		if v, perr := strconv.ParseUint(n, 10, 32); perr == nil {
			return Status(v)
		}
	}
	return StatusBadArgument
}

// String names the status for logs, without fmt.
func (s Status) String() string {
	if int(s) < len(statusNames) && statusNames[s] != "" {
		return statusNames[s]
	}
	return "status " + strconv.FormatUint(uint64(s), 10)
}

// Action is what a stream callback asks the host to do next: the SDK's
// types.Action, so a context written against the SDK's interfaces returns
// the binding's values unchanged.
//
// ActionPause stops iteration: on headers Envoy stops all iteration
// (StopAllIterationAndWatermark), on bodies it buffers
// (StopIterationAndBuffer) until the filter continues the stream.
type Action = types.Action

// The two actions, the SDK's constants under the binding's old names.
const (
	ActionContinue = types.ActionContinue
	ActionPause    = types.ActionPause
)

// MapType selects a header map in the header host calls.
type MapType uint32

// Header maps an HTTP filter and its root context can reach.
const (
	MapRequestHeaders           MapType = 0
	MapRequestTrailers          MapType = 1
	MapResponseHeaders          MapType = 2
	MapResponseTrailers         MapType = 3
	MapHTTPCallResponseHeaders  MapType = 6
	MapHTTPCallResponseTrailers MapType = 7
)

// BufferType selects a byte buffer in the buffer host calls.
type BufferType uint32

// Buffers an HTTP filter and its root context can reach.
const (
	BufferRequestBody          BufferType = 0
	BufferResponseBody         BufferType = 1
	BufferHTTPCallResponseBody BufferType = 4
	BufferVMConfiguration      BufferType = 6
	BufferPluginConfiguration  BufferType = 7
)

// StreamType says which direction proxy_continue_stream resumes.
type StreamType uint32

// Stream directions.
const (
	StreamRequest    StreamType = 0
	StreamResponse   StreamType = 1
	StreamDownstream StreamType = 2
	StreamUpstream   StreamType = 3
)

// MetricType is the kind of a host metric; it decides what IncrementMetric
// and RecordMetric mean for it.
type MetricType uint32

// Metric kinds.
const (
	MetricCounter   MetricType = 0
	MetricGauge     MetricType = 1
	MetricHistogram MetricType = 2
)

// LogLevel is the proxy's log level; Envoy drops messages below its own.
type LogLevel uint32

// Log levels.
const (
	LogTrace    LogLevel = 0
	LogDebug    LogLevel = 1
	LogInfo     LogLevel = 2
	LogWarn     LogLevel = 3
	LogError    LogLevel = 4
	LogCritical LogLevel = 5
)

var levelNames = [...]string{"trace", "debug", "info", "warn", "error", "critical"}

// String names the level for logs, without fmt.
func (l LogLevel) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return "level " + strconv.FormatUint(uint64(l), 10)
}

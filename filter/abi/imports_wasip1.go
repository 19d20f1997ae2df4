//go:build wasip1

package abi

// Host functions, all from Envoy's legacy profile (ABI v0.2.1 "env"). A Go
// string parameter is passed as (pointer, length); a pointer parameter as an
// address in linear memory. Every out-parameter points at a package variable
// (never a stack slot: goroutine stacks move, and an escaping local would be
// a heap allocation per call).

//go:wasmimport env proxy_log
func proxyLog(level uint32, msg string) uint32

//go:wasmimport env proxy_get_status
func proxyGetStatus(code *uint32, msgData *uint32, msgSize *uint32) uint32

//go:wasmimport env proxy_get_property
func proxyGetProperty(path string, retData *uint32, retSize *uint32) uint32

//go:wasmimport env proxy_set_property
func proxySetProperty(path string, value string) uint32

//go:wasmimport env proxy_send_local_response
func proxySendLocalResponse(code uint32, details string, body string, headers string, grpcStatus int32) uint32

//go:wasmimport env proxy_get_shared_data
func proxyGetSharedData(key string, retData *uint32, retSize *uint32, retCas *uint32) uint32

//go:wasmimport env proxy_set_shared_data
func proxySetSharedData(key string, value string, cas uint32) uint32

//go:wasmimport env proxy_get_header_map_value
func proxyGetHeaderMapValue(m uint32, key string, retData *uint32, retSize *uint32) uint32

//go:wasmimport env proxy_add_header_map_value
func proxyAddHeaderMapValue(m uint32, key string, value string) uint32

//go:wasmimport env proxy_replace_header_map_value
func proxyReplaceHeaderMapValue(m uint32, key string, value string) uint32

//go:wasmimport env proxy_remove_header_map_value
func proxyRemoveHeaderMapValue(m uint32, key string) uint32

//go:wasmimport env proxy_get_header_map_pairs
func proxyGetHeaderMapPairs(m uint32, retData *uint32, retSize *uint32) uint32

//go:wasmimport env proxy_set_header_map_pairs
func proxySetHeaderMapPairs(m uint32, pairs string) uint32

//go:wasmimport env proxy_get_buffer_bytes
func proxyGetBufferBytes(b uint32, start uint32, maxSize uint32, retData *uint32, retSize *uint32) uint32

//go:wasmimport env proxy_set_buffer_bytes
func proxySetBufferBytes(b uint32, start uint32, size uint32, data string) uint32

//go:wasmimport env proxy_http_call
func proxyHTTPCall(cluster string, headers string, body string, trailers string, timeoutMs uint32, retToken *uint32) uint32

//go:wasmimport env proxy_set_tick_period_milliseconds
func proxySetTickPeriodMilliseconds(ms uint32) uint32

//go:wasmimport env proxy_get_current_time_nanoseconds
func proxyGetCurrentTimeNanoseconds(ret *uint64) uint32

//go:wasmimport env proxy_define_metric
func proxyDefineMetric(t uint32, name string, retID *uint32) uint32

//go:wasmimport env proxy_increment_metric
func proxyIncrementMetric(id uint32, delta int64) uint32

//go:wasmimport env proxy_record_metric
func proxyRecordMetric(id uint32, v uint64) uint32

//go:wasmimport env proxy_get_metric
func proxyGetMetric(id uint32, ret *uint64) uint32

//go:wasmimport env proxy_set_effective_context
func proxySetEffectiveContext(id uint32) uint32

//go:wasmimport env proxy_continue_stream
func proxyContinueStream(s uint32) uint32

//go:build !wasm

package estimate

// wordsFast is wordsFastGo off wasm (words_wasm.s in the VM).
func wordsFast(s []byte, i int, u int64) (next int, charged int64, done bool) {
	return wordsFastGo(s, i, u)
}

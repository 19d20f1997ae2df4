package estimate

// asciiTables are the byte tables asciiRun reads, in one block so that the
// wasm code reaches them from one address: byteClass at 0, punctIndex at
// 256, pairBits at 512.
type asciiTables struct {
	class      [256]uint8
	punctIndex [256]uint8
	pairBits   [256]uint32
}

var asciiTab = asciiTables{class: byteClass, punctIndex: punctIndex, pairBits: pairBits}

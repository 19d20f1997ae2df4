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

// asciiRunGo is asciiRun's reference: it charges the ASCII pieces of s from
// the letter at s[i] as scan does, with u already charged, and returns where
// it stopped and u plus what it charged. It stops at the first piece it
// leaves to scan, which charges it: a word followed by a capital or a digit
// (a run of several pieces, which words charges as one), three or more
// punctuation characters, whitespace before a byte from 0xE0 up, a byte from
// 0x80 up, or a piece that starts fewer than three bytes before the end
// (a word after a single space and a letter excepted). Each piece it charges
// is charged alone, as scan charges it, so where it stops scan stands at a
// turn. t is the tables the wasm twin reads; the Go code reads the same ones
// by name.
func asciiRunGo(s []byte, i int, u int64, _ *asciiTables) (int, int64) {
	n := len(s)
	for i+3 <= n {
		c := s[i]
		switch byteClass[c] {
		case clsLower, clsUpper:
			for {
				// A word, an optional capital then lower-case letters.
				j := i + 1
				for j < n && byteClass[s[j]] == clsLower {
					j++
				}
				if j < n && byteClass[s[j]] <= clsDigit {
					return i, u // a word of several pieces: words'
				}
				u = plusPieceCost(u, s[i:j])
				i = j
				// A single space then a letter: the space is free and the
				// letter starts the next word.
				if j+2 > n || s[j] != ' ' || uint8(s[j+1]|0x20-'a') >= 26 {
					break
				}
				i = j + 1
			}
		case clsSpace:
			b := s[i+1]
			switch {
			case byteClass[b] == clsSpace:
				i, u = spaceRun(s, i, u)
			case c == '\n' || c == '\r':
				// A newline is a token of its own.
				u += unit
				i++
			case b >= 0xE0:
				return i, u // a space before CJK or Hangul: scan's
			default:
				i++ // a lone space or tab rides on the next piece
			}
		case clsDigit:
			i, u = digitRun(s, i, u)
		case clsPunct:
			switch {
			case byteClass[s[i+1]] != clsPunct:
				u += unit
				i++
			case byteClass[s[i+2]] == clsPunct:
				return i, u // three or more: scan's
			default:
				u += punctPairCost(c, s[i+1])
				i += 2
			}
		default:
			return i, u // a byte from 0x80 up: scan's
		}
	}
	return i, u
}

package estimate

// Per-run charges used by Text, in 1/unit tokens. The figures are tuned
// against cl100k_base and o200k_base on the accuracy corpus in
// accuracy_test.go; each one errs high.
const (
	// A word piece up to wordFreeLen letters is one token in both
	// vocabularies for almost all English and code words; every letter
	// beyond costs wordExtra.
	wordFreeLen = 5
	wordExtra   = unit / 4
	// All-capital pieces (acronyms, constants, shouting) split more.
	capsFreeLen = 3
	capsExtra   = unit / 2
	// A word made of short mixed-case and digit pieces is an identifier
	// or an encoded blob: BPE finds few merges, so letters cost more.
	blobMinLen = 10
	// A long piece with hardly any vowels is not a word either.
	consonantRunLen = 8
	blobExtra       = unit * 5 / 8
	// Repeated punctuation ("-----", "====") is held whole in long runs.
	repeatExtra = unit / 8
	// Whitespace runs (indentation) are held whole up to a length.
	spaceFreeLen = 16
	spacePerChar = unit / 32
)

// wordCost charges one maximal run of ASCII letters and digits.
func wordCost(w []byte) int64 {
	n := len(w)
	// First pass: count pieces to tell words from blobs.
	pieces, digits := 0, 0
	prev := clsPunct // not a letter or digit: the first one counts
	for i := 0; i < n; i++ {
		c := byteClass[w[i]]
		if c != prev && !(prev == clsUpper && c == clsLower) {
			pieces++
		}
		if c == clsDigit {
			digits++
		}
		prev = c
	}
	blob := (n >= blobMinLen && pieces*4 > n) || (digits > 0 && digits < n && pieces >= 3)
	var u int64
	i := 0
	for i < n {
		c := byteClass[w[i]]
		if c == clsDigit {
			j := i
			for j < n && byteClass[w[j]] == clsDigit {
				j++
			}
			u += int64((j-i+2)/3) * unit
			i = j
			continue
		}
		// A letter piece: upper-case letters then lower-case letters.
		j := i
		for j < n && byteClass[w[j]] == clsUpper {
			j++
		}
		upper := j - i
		for j < n && byteClass[w[j]] == clsLower {
			j++
		}
		u += pieceCost(w[i:j], upper, blob)
		i = j
	}
	return u
}

// pieceCost charges one letter piece p (upper capitals then lower-case
// letters) of a word; blob says the word as a whole looks random.
func pieceCost(p []byte, upper int, blob bool) int64 {
	l := len(p)
	switch {
	case blob, l >= consonantRunLen && vowels(p)*6 < l:
		return unit + int64(l-1)*blobExtra
	case l == upper: // all capitals
		if l > capsFreeLen {
			return unit + int64(l-capsFreeLen)*capsExtra
		}
		return unit
	case l > wordFreeLen:
		return unit + int64(l-wordFreeLen)*wordExtra
	}
	return unit
}

// punctIndex numbers the 32 ASCII punctuation characters for pairTable.
var punctIndex = func() (t [256]uint8) {
	next := uint8(0)
	for c := 0; c < 128; c++ {
		if byteClass[c] == clsPunct && c >= 0x20 && c < 0x7f {
			t[c] = next
			next++
		} else {
			t[c] = 0xff
		}
	}
	for c := 128; c < 256; c++ {
		t[c] = 0xff
	}
	return t
}()

// commonPairs are punctuation pairs both vocabularies hold as one token,
// so the second character of such a pair is free.
const commonPairs = `() {} [] ); ), (" ") ", ": ': ', ;" {" "} [" "] }, ], }; => == != <= >= -> :: // /* */ ** -- ++ && || .. ', (' ') $( ${ {{ }} [[ ]] (( )) </ /> <! !- :/ #! %s .( ). ". ." ,' '. ?" !" ": ;' ]) ]; ([ (_ _( __ .* .- -. /. ./ :" ," }) }) [' '] #[ @" #{ ?. ?: |> <- :) (: ;} {{ += -= *= /= %= |= &= ^= ~/ !( !! !== === ...`

var pairTable = func() (t [32]uint32) {
	for i := 0; i+1 < len(commonPairs); i++ {
		a, b := commonPairs[i], commonPairs[i+1]
		if a == ' ' || b == ' ' || a == '\n' || b == '\n' {
			continue
		}
		ia, ib := punctIndex[a], punctIndex[b]
		if ia < 32 && ib < 32 {
			t[ia] |= 1 << ib
		}
	}
	return t
}()

// pairBits is pairTable by character: bit punctIndex[b] of pairBits[a] is
// set when a then b is a common pair. Characters outside pairTable have no
// bits, and their punctIndex (0xff) shifts every bit out.
var pairBits = func() (t [256]uint32) {
	for c := range 256 {
		if i := punctIndex[c]; i < 32 {
			t[c] = pairTable[i]
		}
	}
	return t
}()

// punctCost charges a run of ASCII punctuation: one token per character,
// less for repeats and for the second character of a common pair.
func punctCost(p []byte) int64 {
	var u int64
	pairable := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if i > 0 && c == p[i-1] {
			u += repeatExtra
			pairable = false
			continue
		}
		if pairable {
			ia, ib := punctIndex[p[i-1]], punctIndex[c]
			if ia < 32 && ib < 32 && pairTable[ia]&(1<<ib) != 0 {
				pairable = false
				continue
			}
		}
		u += unit
		pairable = true
	}
	return u
}

// vowels counts the vowels (y included) of an ASCII letter piece.
func vowels(p []byte) int {
	v := 0
	for i := 0; i < len(p); i++ {
		switch p[i] | 0x20 {
		case 'a', 'e', 'i', 'o', 'u', 'y':
			v++
		}
	}
	return v
}

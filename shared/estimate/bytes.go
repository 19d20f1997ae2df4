package estimate

// BytesPerToken is the byte count one token is estimated at where the
// filter cannot read the text: a request body it cannot parse or did not
// buffer, an answer whose usage it cannot read. Four bytes a token is what
// English prose and code average under cl100k_base and o200k_base (the
// mock backend's "tok " words are exactly that); the JSON around the text
// is not charged by a backend, so on a JSON document the estimate leans
// high. Text in three-byte scripts (CJK) runs near one token a character,
// where this estimate is low by a quarter.
const BytesPerToken = 4

// Bytes estimates the tokens of n bytes that could not be read: n divided
// by BytesPerToken, rounded up, at most MaxInput (so sums cannot
// overflow); 0 for n at or below zero.
func Bytes(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return min((n+BytesPerToken-1)/BytesPerToken, MaxInput)
}

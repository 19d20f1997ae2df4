package wasmtest

import (
	"strconv"
	"strings"
)

func itoa(n int) string                 { return strconv.Itoa(n) }
func replace(s, old, new string) string { return strings.Replace(s, old, new, 1) }
func repeat(s string, n int) string     { return strings.Repeat(s, n) }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

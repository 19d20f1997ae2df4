// Command static is a statically linked Linux binary for the static image's tests.
package main

func main() {}

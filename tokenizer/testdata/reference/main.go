// Command reference checks the tokenizer package against independent
// implementations and regenerates the files the package embeds and its
// golden test data. Its Go reference is github.com/pkoukk/tiktoken-go,
// whose pre-tokenizer is the encodings' own regular expressions run by a
// backtracking engine; js/encode.js runs tiktoken's own Rust core, built
// to WebAssembly, over the same texts (see TestJS).
//
//	go run . ranks    # rewrite ../../data/*.bin.gz from the pinned rank files
//	go run . golden   # rewrite ../golden.jsonl from the reference
//	go run . random F # write random texts (as in TestRandom) to F for js/encode.js
//	go test           # differential tests; go test -fuzz=FuzzDiff for more
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: reference ranks|golden|random FILE")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "ranks":
		err = writeRanks("../../data")
	case "golden":
		err = writeGolden("../golden.jsonl")
	case "random":
		err = writeRandom(os.Args[2], 40000)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

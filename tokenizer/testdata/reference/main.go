// Command reference checks the tokenizer package against an independent
// implementation (github.com/pkoukk/tiktoken-go, whose pre-tokenizer is
// the encodings' own regular expressions run by a backtracking engine)
// and regenerates the files the package embeds and its golden test data.
//
//	go run . ranks    # rewrite ../../data/*.bin.gz from the pinned rank files
//	go run . golden   # rewrite ../golden.jsonl from the reference
//	go test           # differential tests; go test -fuzz=FuzzDiff for more
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: reference ranks|golden")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "ranks":
		err = writeRanks("../../data")
	case "golden":
		err = writeGolden("../golden.jsonl")
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

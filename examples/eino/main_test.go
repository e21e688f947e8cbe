package main

import (
	"os"
)

// The program's output, which also shows that it is deterministic: the
// scripted model and canned tools make every run the same.
func Example() {
	if err := run(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// budget 3000 tokens; keep the last 2 tool results, clear older ones
	// call 1:    24 tokens, under budget; 2 messages sent
	// call 2:   106 tokens, under budget; 4 messages sent
	// call 3:  2220 tokens, under budget; 7 messages sent
	// call 4:  2248 tokens, under budget; 9 messages sent
	// call 5:  3157 -> 1039 tokens (pruned); 11 messages sent
	//         cleared read_file call_1 (75 tokens), read_file call_2 (600 tokens), read_file call_3 (1500 tokens)
	//         kept user: referenced
	// call 6:  2246 tokens, under budget; 13 messages sent
	// call 7:  2268 tokens, under budget; 15 messages sent
	// call 8:  2675 tokens, under budget; 17 messages sent
	// call 9:  4183 -> 2121 tokens (pruned); 19 messages sent
	//         cleared read_file call_5 (900 tokens), read_file call_6 (1200 tokens)
	//         kept assistant, run_tests call_4 (21 tokens): irreducible
	//         kept run_tests call_4 (21 tokens): irreducible
	// answer: The parser does not handle EOF inside a string literal (parser.go:88).
	// every one of the 9 model calls got a well-formed conversation
	// read_file: 1 call(s) re-read a result the guard had cleared
}

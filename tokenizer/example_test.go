package tokenizer_test

import (
	"fmt"

	"github.com/pruneguard/pruneguard/tokenizer"
)

func Example() {
	enc := tokenizer.O200k()

	ids := enc.Encode("hello world")
	fmt.Println(ids)

	text, err := enc.Decode(ids)
	fmt.Printf("%q %v\n", text, err)

	fmt.Println(enc.Count([]byte(`{"role":"user","content":"hello world"}`)))
	// Output:
	// [24912 2375]
	// "hello world" <nil>
	// 10
}

func ExampleEncoding_Count() {
	body := []byte("It's 2025, and the café serves 🍵.")
	for _, enc := range []*tokenizer.Encoding{tokenizer.O200k(), tokenizer.Cl100k()} {
		fmt.Println(enc.Name(), enc.Count(body))
	}
	// Output:
	// o200k_base 12
	// cl100k_base 14
}

func ExampleEncoding_Decode() {
	_, err := tokenizer.O200k().Decode([]int{24912, 300000})
	fmt.Println(err)
	// Output:
	// tokenizer: o200k_base has no token with id 300000
}

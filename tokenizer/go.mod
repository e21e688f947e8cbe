module github.com/pruneguard/pruneguard/tokenizer

go 1.21

replace github.com/pruneguard/pruneguard => ../

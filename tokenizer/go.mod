module github.com/pruneguard/pruneguard/tokenizer

go 1.24

replace github.com/pruneguard/pruneguard => ../

require github.com/pruneguard/pruneguard v0.0.0-00010101000000-000000000000

module github.com/pruneguard/pruneguard

go 1.24

// Package house checks the layout rules of the repository that a reader
// can check by hand: what the root package imports, how long functions
// are, where provider knowledge lives and what holds containers.
package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// root is the module's root, from this package's folder.
const root = "../.."

// sources walks the non-test Go files of the module (nested modules,
// testdata and generated files left out) and calls f with each file's
// path relative to root and its syntax.
func sources(t *testing.T, f func(rel string, fset *token.FileSet, file *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir // a nested module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		file, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		if ast.IsGenerated(file) {
			return nil
		}
		f(filepath.ToSlash(rel), fset, file)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The root package is the pure core: it imports the standard library
// and its own internal packages, nothing else, and no package that does
// I/O.
func TestRootImports(t *testing.T) {
	banned := map[string]bool{"net": true, "net/http": true, "os": true, "os/exec": true, "io/ioutil": true, "time": true, "math/rand": true, "math/rand/v2": true, "crypto/rand": true}
	sources(t, func(rel string, _ *token.FileSet, file *ast.File) {
		if strings.Contains(rel, "/") {
			return
		}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case banned[p]:
				t.Errorf("%s imports %s: the core does no I/O and reads no clock", rel, p)
			case strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && !strings.HasPrefix(p, "github.com/pruneguard/pruneguard/internal/"):
				t.Errorf("%s imports %s: the core imports the standard library and its internal packages only", rel, p)
			}
		}
	})
}

// No function outside generated tables is longer than 150 lines.
func TestFunctionLength(t *testing.T) {
	const most = 150
	sources(t, func(rel string, fset *token.FileSet, file *ast.File) {
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > most {
				t.Errorf("%s: %s is %d lines long (at most %d)", rel, fn.Name.Name, n, most)
			}
		}
	})
}

// Provider knowledge lives in the provider files: no case on a dialect
// constant anywhere else in package wire but the one dispatch.
func TestDialectCasesInProviderFiles(t *testing.T) {
	dialects := map[string]bool{"OpenAIChat": true, "OpenAIResponses": true, "Anthropic": true, "Gemini": true, "Bedrock": true}
	allowed := map[string]bool{}
	for _, f := range []string{"chat", "responses", "anthropic", "gemini", "bedrock", "dialect"} {
		allowed["wire/"+f+".go"] = true
	}
	sources(t, func(rel string, fset *token.FileSet, file *ast.File) {
		if !strings.HasPrefix(rel, "wire/") || strings.Count(rel, "/") != 1 || allowed[rel] || provider(rel) {
			return
		}
		ast.Inspect(file, func(n ast.Node) bool {
			cc, ok := n.(*ast.CaseClause)
			if !ok {
				return true
			}
			for _, e := range cc.List {
				if id, ok := e.(*ast.Ident); ok && dialects[id.Name] {
					t.Errorf("%s:%d: case %s outside the provider files", rel, fset.Position(cc.Pos()).Line, id.Name)
				}
			}
			return true
		})
	})
}

// provider reports whether rel is a file of one provider's rules (named
// after it: anthropic_rules.go and the like).
func provider(rel string) bool {
	base := strings.TrimPrefix(rel, "wire/")
	for _, p := range []string{"chat_", "responses_", "anthropic_", "gemini_", "bedrock_"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

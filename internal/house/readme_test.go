package house

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readme returns the README's text.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// blocks returns the lines of the README's fenced blocks of one language.
func blocks(text, lang string) [][]string {
	var out [][]string
	var cur []string
	in := false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case !in && l == "```"+lang:
			in, cur = true, nil
		case in && l == "```":
			in = false
			out = append(out, cur)
		case in:
			cur = append(cur, l)
		}
	}
	return out
}

var space = regexp.MustCompile(`\s+`)

// code is a Go line without its trailing comment, white space folded.
func code(l string) string {
	if i := strings.Index(l, " // "); i >= 0 {
		l = l[:i]
	}
	return strings.TrimSpace(space.ReplaceAllString(l, " "))
}

// The README's Go snippets are cut from code that compiles and runs in
// the tests: every line of code in them stands in a Go file of the
// repository, nested modules included.
func TestReadmeSnippetsAreFromTestedCode(t *testing.T) {
	var corpus strings.Builder
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(b), "\n") {
			corpus.WriteString(code(l))
			corpus.WriteByte('\n')
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all := corpus.String()
	snippets := blocks(readme(t), "go")
	if len(snippets) < 6 {
		t.Fatalf("README has %d Go snippets; want one per kind of runtime and compaction", len(snippets))
	}
	letter := regexp.MustCompile(`[A-Za-z]`)
	for _, s := range snippets {
		for _, l := range s {
			c := code(l)
			if c == "" || strings.HasPrefix(c, "//") || !letter.MatchString(c) {
				continue
			}
			if !strings.Contains(all, c) {
				t.Errorf("README snippet line %q stands in no Go file", c)
			}
		}
	}
}

// The two commands the README gives a newcomer are the ones CI runs.
func TestReadmeCommandsRunInCI(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	text := readme(t)
	for _, cmd := range []string{"go run ./examples/agentloop", "go test -race ./..."} {
		if !strings.Contains(text, "\n"+cmd) {
			t.Errorf("README does not give %q", cmd)
		}
		if !runs(string(ci), cmd) {
			t.Errorf(".ci/run does not run %q", cmd)
		}
	}
}

// runs reports whether a line of script starts with cmd.
func runs(script, cmd string) bool {
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), cmd) {
			return true
		}
	}
	return false
}

// Every file the README's map of the house and its reference table name
// exists.
func TestReadmeNamesFilesThatExist(t *testing.T) {
	text := readme(t)
	i := strings.Index(text, "## Map of the house")
	if i < 0 {
		t.Fatal("README has no map of the house")
	}
	paths := regexp.MustCompile("`([\\w./<>-]+\\.go)`").FindAllStringSubmatch(text[i:], -1)
	if len(paths) < 20 {
		t.Fatalf("the map names %d files; want the files to open first", len(paths))
	}
	for _, p := range paths {
		name := p[1]
		if strings.Contains(name, "<provider>") {
			for _, prov := range []string{"chat", "responses", "anthropic", "gemini", "bedrock"} {
				check(t, strings.ReplaceAll(name, "<provider>", prov))
			}
			continue
		}
		check(t, name)
	}
	for _, l := range regexp.MustCompile(`\]\(((?:docs/)?[\w.-]+\.md)\)`).FindAllStringSubmatch(text, -1) {
		check(t, l[1])
	}
}

func check(t *testing.T, rel string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
		t.Errorf("README names %s: %v", rel, err)
	}
}

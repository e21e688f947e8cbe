package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// subcommand describes one subcommand for help: how it is called, what it
// does, and its flags.
type subcommand struct {
	name     string
	synopsis string
	about    string
	flags    func() *flag.FlagSet
}

var subcommands = []subcommand{
	{
		name:     "check",
		synopsis: "pruneguard check [--dialect D] [--format json|text] FILE|-",
		about: `Checks a request body against its provider's rules: what the provider would
reject with HTTP 400 (orphaned tool results, calls without results, broken
turn order, empty tools arrays, ...), each with the provider's own words.
Prints {"dialect": D, "violations": [{"rule", "index", "message"}]}, or with
--format text one line per violation (where it is, its rule, the provider's
words) and a line that counts them. Calls still waiting for their results at
the end of the body count as a violation (rule "<dialect>/pending-calls").
Exits 0 with no violation, 1 with some, 2 when the input cannot be read.`,
		flags: func() *flag.FlagSet { fs, _ := checkFlagSet(); return fs },
	},
	{
		name:     "prune",
		synopsis: "pruneguard prune --budget TOKENS [flags] FILE|-",
		about: `Brings a request body under a token budget counted over the whole body
(messages, system prompt, tools and settings), pruning only what the guard
lets go: whole units, never a call without its result or a message still in
flight, no irreducible result unless a tool is vouched for, no provider rule
broken that the input kept. Writes the pruned body on stdout and one JSON
report line on stderr: tokens in and out, "within_budget" and a
"description" saying plainly whether the output fits, what was evicted, stubbed
and withdrawn, and what the guard refused and why. Exits 0 when the output
is within the budget, 3 when the guard's refusals leave no safe way there
(the output is then the furthest safe prune), 2 on bad input. With --spill
DIR, what only a spill lets go is first stored in DIR, then pruned, its
pointer left in the output; the report's "spilled" lists each key with the
input indexes of the messages under it (see pruneguard help recall), and
"spill_failed" any spill DIR refused, whose messages stay. The
pointer tells the model to call a recall tool that the output does not
declare: the runtime sending it declares one and answers it from DIR. With
--summarize builtin, the guard compacts before it evicts: the oldest whole
units that may go are replaced by one summary message (one for each stretch
between pinned messages), a user message
of the dialect in the place of the run, that says what happened and quotes
every fact the guard requires verbatim (with --spill, the run is stored
first and the summary carries its key instead); the report's "summary"
says what the summaries the output holds replaced and carry, all together:
{"indexes": the input messages replaced, "facts": how many facts they
carry, "keys": the spill keys they carry}, and "summarized" lists them one
by one, each with its "index", the input index of the first message it
replaced, whose place it takes. A summary that would drop a fact or break a provider
rule is refused, and the guard evicts instead. Any --summarize value but
builtin exits 2.`,
		flags: func() *flag.FlagSet { fs, _ := pruneFlagSet(); return fs },
	},
	{
		name:     "extract",
		synopsis: "pruneguard extract FILE|-",
		about: `Prints the request body inside a recorded transcript envelope (tau-bench,
OpenHands, SWE-agent, NeMo Gym, pydantic-ai cassettes, Claude Code session
logs), so that check and prune can read it. Exits 0, or 2 when the file is
not one of those envelopes.`,
		flags: func() *flag.FlagSet { return flag.NewFlagSet("extract", flag.ContinueOnError) },
	},
	{
		name:     "recall",
		synopsis: "pruneguard recall --spill DIR KEY | --query WORDS [--page N]",
		about: `Prints the messages a prune --spill DIR stored under KEY (a key from its
report's "spilled", or "spill:KEY" as the pointer line in the pruned body
shows it): a JSON array of the messages, in the order stored, each exactly as
the input body held it. With --query WORDS instead of KEY, searches every
message stored in DIR and prints the answer the recall tool gives a model for
that query: a JSON object with the best matching messages (each with its
key, its index in its segment and its score), one page at a time (--page),
"pages" and, but on the last page, the "next" arguments. Exits 0, or 2 when
DIR holds no entry under KEY, the entry is damaged (its checksum fails), KEY
is not a key, or the query has no word or no such page.`,
		flags: func() *flag.FlagSet { fs, _ := recallFlagSet(); return fs },
	},
}

// usage writes the command's usage: each subcommand, one line on what it
// does, and how to get its own help.
func usage(w io.Writer) {
	var b strings.Builder
	b.WriteString("usage: pruneguard COMMAND [flags] FILE|-\n\ncommands:\n")
	b.WriteString("  check    check a request body against its provider's rules\n")
	b.WriteString("  prune    bring a request body under a token budget, pruning only what is safe\n")
	b.WriteString("  extract  print the request body inside a recorded transcript\n")
	b.WriteString("  recall   print the messages a prune spilled under a key, or search them\n")
	b.WriteString("  help     print the usage of a command: pruneguard help COMMAND\n")
	b.WriteString("\n")
	for _, c := range subcommands {
		b.WriteString("  " + c.synopsis + "\n")
	}
	b.WriteString("\ndialects: openai-chat, openai-responses, anthropic, gemini, bedrock (detected when\n")
	b.WriteString("  omitted; check a pruned body with the dialect its prune report names)\n")
	io.WriteString(w, b.String())
}

// commandUsage writes the usage of subcommand name: how it is called,
// what it does and its flags, or the command's usage for another name.
func commandUsage(w io.Writer, name string) bool {
	for _, c := range subcommands {
		if c.name != name {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "usage: %s\n\n%s\n", c.synopsis, c.about)
		fs := c.flags()
		first := true
		fs.VisitAll(func(f *flag.Flag) {
			if first {
				b.WriteString("\nflags:\n")
				first = false
			}
			text := f.Usage
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "-1" {
				text += " (default " + f.DefValue + ")"
			}
			arg := ""
			if a := flagArgs[f.Name]; a != "" {
				arg = " " + a
			}
			fmt.Fprintf(&b, "  --%s%s\n%s", f.Name, arg, wrap(text, "      ", 78))
		})
		io.WriteString(w, b.String())
		return true
	}
	usage(w)
	return false
}

// flagArgs names the value each flag takes, for the usage.
var flagArgs = map[string]string{
	"budget": "TOKENS", "keep": "N", "dialect": "D", "format": "json|text", "policy": "oldest|largest|keep-last-tools",
	"tools-manifest": "FILE", "spill": "DIR", "unannotated": "irreducible|regenerable", "text": "irreducible|reconstructible", "boundary": "relaxed|strict", "report": "summary|full",
}

// wrap breaks text into lines of at most width columns, each starting
// with indent.
func wrap(text, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}

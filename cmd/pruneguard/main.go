// Command pruneguard checks and prunes LLM provider request bodies with the
// pruneguard guard.
//
// Usage:
//
//	pruneguard check [--dialect D] [--format json|text] FILE|-
//	pruneguard prune --budget TOKENS [--dialect D] [--policy oldest|largest|keep-last-tools]
//	                 [--keep N] [--tools-manifest FILE] [--unannotated irreducible|regenerable]
//	                 [--boundary relaxed|strict] [--drop-unused-schemas] [--report summary|full]
//	                 [--spill DIR] FILE|-
//	pruneguard extract FILE|-
//	pruneguard recall --spill DIR KEY
//	pruneguard recall --spill DIR --query WORDS [--page N]
//	pruneguard help [COMMAND]
//
// check validates a request body against its provider's rules and prints
// {"dialect": D, "violations": [{"rule", "index", "message"}]}; with
// --format text it prints one line per violation instead, where it is
// (the history's key and the message's index), its rule and the
// provider's words ("messages[3]: openai-chat/orphan-tool-message: ..."),
// then a line that counts them ("openai-chat: 2 violations", or "no
// violations"). It exits 0 when there is no violation, 1 when there are
// some (pending calls at the end of the body count), and 2 when the input
// cannot be read or parsed.
// What counts as parsed is what the wire reader accepts, for every
// command: any JSON object of the dialect, with any number the JSON
// grammar allows (1e400 and -0 included, written back as they were);
// not bytes that are not UTF-8, nor a leading byte order mark.
// Detection goes by the body's shape, and pruning can take away what it
// goes by (an Anthropic history whose tool turns were evicted can read as
// OpenAI Chat): check a pruned body with --dialect set to the dialect the
// prune report names.
//
// prune brings a request body under a token budget, counted over the whole
// body (messages, system prompt, tools), a quarter of the compact JSON's
// length per token. It prints the pruned body on stdout and one JSON report
// line on stderr: the dialect and settings, input_tokens, output_tokens,
// within_budget (whether output_tokens is at most the budget), a summary
// that says it in words ("within budget: 3340 of 4000 tokens (from
// 7148); evicted 7 units (18 messages)", or "over budget by N tokens:
// ..." with the count of refusals that hold the rest back), the
// outcome, the evicted units, stubbed messages, withdrawn schemas,
// tombstone lines, refusals and unpaired calls and results, counts of
// each (evicted units and messages, stubbed messages, refusals, unpaired),
// messages (the input's), and the milliseconds spent reading the body
// and binding it to the guard (read_ms), deciding what to prune (prune_ms)
// and writing the output (write_ms). By default (--report summary) a list
// longer than 16 items is cut to its first 8 and last 8, the counts
// telling how many there were; --report full lists every item. The body
// is read in one pass and the output written by splicing the kept
// messages' bytes, so the command's time and memory follow the body's
// size. It exits 0 when the output is within the budget, 3 when
// the guard's refusals (pending calls, pinned or irreducible messages,
// provider rules) leave no safe way there, in which case the output is the
// furthest safe prune, and 2 on bad input, printing nothing on stdout.
// The output is written in the dialect given or detected (the report's
// "dialect"), and never with an empty history, which every provider
// rejects: the last unit stays, even over the budget.
//
// The policies: oldest evicts whole units oldest first
// (pruneguard.OldestFirst); largest stubs the largest tool results first
// (pruneguard.LargestResultsFirst with Stub; every dialect keeps the call
// and the result block with a placeholder, so a stub never breaks pairing,
// and a result whose content cannot become text, a Responses computer
// call's screenshot, is not stubbed) and, once no result is left to stub,
// evicts whole units oldest first;
// keep-last-tools stubs every tool result but the last --keep
// (pruneguard.KeepLastToolUses with Stub), as Anthropic's clear_tool_uses
// edit does, and nothing else.
//
// Tools without MCP annotations, in the body or in the --tools-manifest (an
// MCP tools/list result), are irreducible by default: their results are
// never evicted or stubbed. --unannotated regenerable vouches that they can
// be called again for the same result.
//
// The budget counts the tools array, but no policy touches it: the
// report's "withdrawn" and "tombstones" stay empty unless
// --drop-unused-schemas is given. With it, each plan also withdraws the
// schemas of declared tools never called or whose every call the plan
// evicts; the schema gate removes a schema outright when no call to the
// tool stays, and behind a tombstone line added to the system prompt when
// one does (its unit was held back). A body without a system prompt
// (OpenAI Chat, Gemini, Bedrock) gets none: a tool whose calls stay then
// keeps its schema if it may change state, and loses it untombstoned if
// it is read-only. The last entry of a tools array, tools named in the
// body's tool choice or legacy function_call, and tools the provider runs
// that the body uses are kept.
//
// A body at rest is not a live runtime: by default the relaxed commit
// boundary holds back only the units still in flight (a trailing batch of
// calls whose results have not all arrived). --boundary strict defers every
// prune while any call is pending.
//
// Every error is one line on stderr: "pruneguard: " then, for input, the
// file name ("<stdin>" for -) with the line and column of a fault in the
// JSON text, and what is wrong. -h or --help after a subcommand, or
// "help" followed by its name, prints what the subcommand does and its
// flags on stdout and exits 0; -h, --help or "help" alone prints the
// commands. A flag that is unknown or has a bad value exits 2 before any
// input is read, its error line naming the help to read. --budget
// and --keep take decimal integers (a leading zero is not octal).
//
// With --spill DIR, prune spills what only a spill lets go (the
// irreducible messages of closed units, results it would stub) to a
// directory store at DIR before it prunes them: each segment is written,
// synced, read back and compared first, and holds the messages as the
// input body held them. An evicted spilled message leaves one line per
// segment in the system prompt, after any tombstone lines, naming the key
// and how to read it back; a stubbed spilled result carries that text
// instead of the stub text. A body with no system prompt to carry a line
// (OpenAI Chat, Gemini, Bedrock without one) spills only tool results,
// for their stubs. The report's "spilled" lists, in the order spilled,
// each segment's key with the input indexes of the messages stored under
// it (whatever --report says). Every message the prune evicts or stubs
// is either reconstructible or listed there. The pointer text tells the
// model to call a recall tool, which prune does not add to the body: the
// runtime that sends it declares one (wire.RecallTool gives its entry in
// each dialect) and answers its calls from DIR
// (spill.Spiller.HandleRecall, or pruneguard recall). With --spill, the
// results of a tool named recall in the body are read as the recall
// tool's (read-only, closed-world) unless the body or --manifest
// annotates it.
//
// extract prints the request body inside a recorded transcript envelope
// (see testdata/transcripts/SOURCES.md), so that check and prune can read
// it.
//
// recall --spill DIR KEY prints, on stdout, a JSON array of the messages
// a prune spilled under KEY (as its report gives it, or as "spill:KEY" as
// the pointer line shows it), each exactly as the input body held it, and
// exits 0; a key the directory does not hold, a damaged entry or a bad key
// exits 2 with one error line. recall --spill DIR --query WORDS [--page N]
// prints the answer the recall tool gives a model for that query
// (spill.Spiller.HandleRecall): the best matching messages of every
// segment in DIR, a page at a time.
package main

import (
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the command with its arguments and streams; it returns the exit
// code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "check":
		return runCheck(args[1:], stdin, stdout, stderr)
	case "prune":
		return runPrune(args[1:], stdin, stdout, stderr)
	case "extract":
		return runExtract(args[1:], stdin, stdout, stderr)
	case "recall":
		return runRecall(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		switch {
		case len(args) == 1:
			usage(stdout)
		case len(args) == 2 && commandUsage(io.Discard, args[1]):
			commandUsage(stdout, args[1])
		default:
			errorf(stderr, "help takes one command: check, prune, extract or recall")
			return 2
		}
		return 0
	}
	errorf(stderr, "unknown command %q (want check, prune, extract, recall or help)", args[0])
	return 2
}

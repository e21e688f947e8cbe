// Package facts finds the load-bearing facts of a message's text: the
// exact strings a later turn may need and cannot get back by reading
// anything else, such as a ticket id, an exit code, a path, an error line
// or a negative result. It decides nothing about a message; it lists what
// a summary that replaces the message must carry, and [Carrier] checks
// that a summary carries it.
//
// Extraction is pure and deterministic (no I/O, no clock, no randomness):
// the same text gives the same facts in the same order. It is linear in
// the length of the text and uses no regular expressions.
//
// # Facts
//
// A [Fact] is a string with its [Kind], the byte offset where it starts
// in the text and, for some kinds, the key that names it. Its Text is
// verbatim: a span of the text as the model reads it, never rewritten,
// with two exceptions stated below (a [KindKV] fact read from JSON, and
// a fact read from a JSON string that holds escapes, whose text is the
// decoded string's). The kinds, from the most to the least important:
//
//   - [KindNegative]: a sentence that records a negative result, such as
//     "the OOM is not from the shell", "No reservations found",
//     "file does not exist" or "0 results": it holds one of a fixed list
//     of phrases (not the cause, not found, does not exist, no such,
//     no ... found, 0 results, did not find, ruled out, ...). The fact is
//     the sentence (split at a line end or at '.', '!' or '?' before
//     white space), without its closing '.', '!' or '?'.
//   - [KindError]: a line that reports an error: it holds error, failed,
//     failure, exception, denied, not found, traceback, fatal, panic,
//     refused, timed out, no such file, cannot, unable to, invalid,
//     killed or out of memory (case aside). The fact is the line, without
//     a closing '.', '!' or '?'; when the line is also a negative result,
//     it is that. A
//     string a JSON object gives under an error key (error, err,
//     exception, stderr, traceback) gives its first line as one too.
//   - [KindID]: an identifier: a UUID; a hex string of 7 to 64 digits
//     holding both digits and letters (a commit sha, a hash); a word of
//     4 to 64 letters, digits, '_' and '-' (after an optional '#') that
//     holds at least one letter, two digits or one digit and six
//     characters, and an upper-case letter, a '_' or '-', or eight
//     characters (INC-4711, ABC123, 8JVP2Q, mia_li_3668, #W2378156). In
//     JSON, any one-word string under a key whose last word is id, uuid,
//     guid, code, number, no, num, sha, hash, digest, ref or nonce
//     (reservation_id, orderNumber), whatever its shape ("AQLBTL").
//   - [KindKV]: a setting whose value alone would say nothing: a
//     key=value word of the text (mode=strict, --env=prod) whose value is
//     not a fact of its own kind, and in JSON a boolean, or a one-digit
//     number, under a key. Its Text is always Key, '=' and the value;
//     from JSON it is written so whatever the JSON's spelling.
//   - [KindNumber]: a number that matters: an amount with a currency
//     symbol or code ($1,234.50, 12.50 USD); a version (1.24.3, v2.1);
//     an IPv4 address; a number with a unit or a percent sign (512MB,
//     30s, 85%); a decimal fraction; an integer of three or more digits;
//     a number after a keyword (exit, code, status, port, pid, errno,
//     signal, http, returned, line, limit, ulimit, attempt, retries),
//     whose Key is the keyword: the fact is the number when it has
//     three or more digits ("137" of "exit 137") and the keyword and the
//     number otherwise ("exit 1"). In JSON, every number of two or more
//     characters, with its key.
//   - [KindTime]: a date or time: 2024-05-15, 2024-05-15T15:00:00Z,
//     2024/05/15, 05/15/2024, 15:00, 15:00:00.
//   - [KindPath]: a file path: a word starting with /, ./, ../ or ~/ or a
//     drive letter and holding a letter; a word with two or more slashes,
//     or one and a last part with an extension (src/main.go); a file name
//     with a common extension (main.go, setup.py). A ":line" suffix stays.
//   - [KindURL]: a URL (scheme://...), or a host:port word.
//   - [KindEmail]: an e-mail address.
//   - [KindQuoted]: the text between a pair of double quotes or single
//     backquotes on one line, holding a letter or a digit (runs of two or
//     more backquotes, as in code fences, are not quotes).
//
// A message that is a JSON object or array (a tool result, a call's
// arguments) is read as JSON: its keys name its scalar leaves, and each
// string leaf is read as text (a string that holds JSON again is read as
// JSON, one level deep). Anything else is read as text.
//
// # Bounds
//
// A fact is at most [MaxLen] bytes: a longer error line or sentence is
// cut to a window of whole words around the phrase that made it a fact,
// and a longer word or quote is not a fact. [Extract] returns at most
// [MaxFacts] facts: when a text holds more, the more important kinds
// (in the order above) win, and within a kind the earlier facts; the
// facts returned are in the order of their offsets. A text holds each
// fact once: a string found as two kinds is the more important one, at
// its first offset.
//
// # Carrying a fact
//
// A text carries a fact when the fact's Text appears in it, with runs of
// white space (space, tab, line ends) taken as one space on both sides
// and nothing else forgiven: case, digits and punctuation are exact. An
// appearance counts only when it is not part of a longer word or number:
// a fact that starts (ends) with a letter or digit must not have a letter,
// digit or '_' just before (after) it, nor, when it starts (ends) with a
// digit, a '.' or ',' joining another digit ("137" is not carried by
// "1370" or "3.137"). A [KindKV] fact is also carried as "key: value",
// "key = value", "\"key\": value" or "\"key\": \"value\"" (with or
// without the space after the colon).
package facts

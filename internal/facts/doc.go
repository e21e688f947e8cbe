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
//     "file does not exist" or "0 results". It holds one of a fixed list
//     of phrases: not the cause (problem, issue, culprit), not caused by,
//     not related to, is (was) not from, not found, does (do, did) not
//     exist, no such, 0 results (matches, rows), zero results, no
//     results, no match(es), nothing found, found nothing, did (could)
//     not find, unable to find, not reproduce(ible), ruled (rules) out,
//     not present, not available, none found, no longer, and "no" or
//     "none" up to 48 bytes before "found" in one sentence. The fact is
//     the sentence (split at a line end, or at '.', '!' or '?' before
//     white space) without its closing '.', '!' or '?'.
//   - [KindError]: a line that reports an error. It holds error, failed,
//     failure, exception, denied, not found, traceback, fatal, panic,
//     refused, timed out, no such file, cannot, unable to, invalid,
//     killed, out of memory or oom (case aside; the short ones only as
//     words). The fact is the line without its closing '.', '!' or '?'.
//     A string a JSON object gives under an error key (error, err,
//     exception, stderr, traceback, error_message) gives its first line
//     as one too.
//   - [KindID]: an identifier: a UUID; 7 to 64 hex digits in one case
//     holding both digits and letters (a commit sha, a hash); a word of
//     4 to 64 letters, digits, '_' and '-', after an optional '#' (which
//     is not part of the fact), that holds a letter, and two digits or
//     one digit and six bytes, and an upper-case letter, a '_' or '-', or
//     eight bytes (INC-4711, ABC123, 8JVP2Q, mia_li_3668, W2378156). In
//     JSON, any one-word string under a key whose last word is id, ids,
//     uuid, guid, code, number, no, num, sha, hash, digest, ref or nonce
//     (reservation_id, orderNumber), whatever its shape ("AQLBTL").
//   - [KindKV]: a setting whose value alone would say nothing: a
//     key=value word of the text (mode=strict, --env=prod) whose value is
//     a plain word and not a fact of its own (a value that is one, as in
//     id=ABC123, gives that fact with the key as its Key); in JSON, a
//     boolean or a one-digit number under a key. Its Text is always Key,
//     '=' and the value; from JSON it is written so whatever the JSON's
//     spelling.
//   - [KindNumber]: a number that matters: an amount with a currency
//     symbol ($, €, £, ¥) or an ISO code one space before or after it
//     ($1,234.50, 12.50 USD); a version (1.24.3, v2.1, 1.2.0-rc1); an
//     IPv4 address; a decimal fraction; a number with thousands
//     separators; a number with a unit of at most three letters or a
//     percent sign (512MB, 30s, 85%); an integer of three or more digits.
//     A number of one or two digits is a fact only after a keyword (exit,
//     code, status, port, pid, errno, signal, http, returned, line,
//     limit, ulimit, attempt, retries, rc, one space before it), and the
//     fact is then the keyword and the number, from the keyword before
//     it when there are two ("exit 1", "exit code 1"); a longer number
//     after a keyword is the number alone ("137" of "exit 137"), and in
//     both the keyword is its Key. In JSON, every number of two or more
//     characters, with its key.
//   - [KindTime]: a date or time: 2024-05-15, 2024-05-15T15:00:00Z,
//     2024/05/15, 05/15/2024, 15:00, 15:00:00, 3:00pm.
//   - [KindPath]: a file path: a word starting with /, ./, ../, ~/ or a
//     drive letter and holding a letter; a word with two or more slashes
//     and a letter, or with one slash and a last part with an extension
//     (src/main.go); a file name with a common extension (main.go,
//     setup.py). A ":line" or ":line:col" suffix stays.
//   - [KindURL]: a URL (scheme://...), or a host:port word
//     (db.internal:5432, 10.0.0.1:8080).
//   - [KindEmail]: an e-mail address.
//   - [KindQuoted]: the text between a pair of double quotes or single
//     backquotes on one line, holding a letter or a digit, without the
//     white space at its ends (runs of two or more backquotes, as in code
//     fences, are not quotes).
//
// Words are split at white space, and into atoms at quotes, brackets,
// ',', ';', '|' and '='; an atom is looked at without the punctuation
// around it ('#', '*', '!', '?', ':' before it; '.', ':', '!', '?', '*'
// after it).
//
// A message that is a JSON object or array (a tool result, a call's
// arguments) is read as JSON: its keys name its scalar leaves, and each
// string leaf is read as text (a string that holds JSON again is read as
// JSON, one level deep). Anything else is read as text.
//
// # Bounds
//
// A fact is at most [MaxLen] bytes: a longer error line or sentence is
// cut to a window of whole words around the phrase that made it a fact
// (or gives no fact, when the words there are too long for a window), and
// a longer word or quote is not a fact. [Extract] returns at most
// [MaxFacts] facts: when a text holds more, the more important kinds (in
// the order above) win, and within a kind the earlier facts; the facts
// returned are in the order of their offsets. A text holds each fact
// once: a string found as two kinds is the more important one, at its
// first offset.
//
// # Carrying a fact
//
// A text carries a fact when the fact's Text appears in it, with runs of
// white space (space, tab, line ends) taken as one space on both sides
// and nothing else forgiven: case, digits and punctuation are exact. An
// appearance counts only when it is not part of a longer word or number:
// a fact that starts (ends) with a letter, digit or '_' must not have a
// letter, digit or '_' (of any script) just before (after) it, nor, when
// it starts (ends) with a digit, a '.' or ',' joining another digit
// ("137" is not carried by "1370" or "3.137"); a fact that starts with
// '/', '\\', '.' or '~' (a path) must not have any of those, a '-' or a
// letter, digit or '_' just before it ("/etc/hosts" is not carried by
// "/opt/etc/hosts", nor "./run.sh" by "../run.sh"). A [KindKV] fact is also
// carried as "key: value", "key = value", "\"key\": value" or
// "\"key\": \"value\"" (with or without the space after the colon).
// Every fact of a plain text is carried by that text.
package facts

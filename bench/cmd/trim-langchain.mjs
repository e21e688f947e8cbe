// LangChain's trimMessages on a request body, measured the way pruneguard
// prune is: the body's messages become LangChain messages, then
// trimMessages keeps the last messages that fit the budget (strategy
// "last", the system message kept, the history starting on a human
// message, no partial messages), counting each message as a quarter of
// its JSON's length, counted once beforehand so that only trimMessages'
// own work is timed.
//
//   node trim-langchain.mjs BODY.json BUDGET > out.json
//
// One JSON line on stderr gives the tokens and the time of each phase.
import { readFileSync } from "node:fs";
import { coerceMessageLikeToMessage, trimMessages } from "@langchain/core/messages";

const [file, budgetArg] = process.argv.slice(2);
const budget = Number(budgetArg);
const ms = (a, b) => Number(b - a) / 1e6;
const tokens = (v) => Math.ceil(JSON.stringify(v).length / 4);

const t0 = process.hrtime.bigint();
const body = JSON.parse(readFileSync(file, "utf8"));
const overhead = tokens({ ...body, messages: [] });
// Counted by id: trimMessages hands the counter copies of the messages.
const counted = new Map();
const lc = body.messages.map((m, i) => {
  const x = coerceMessageLikeToMessage(m);
  x.id = String(i);
  counted.set(x.id, tokens(m));
  return x;
});
const t1 = process.hrtime.bigint();

const kept = await trimMessages(lc, {
  maxTokens: budget - overhead,
  strategy: "last",
  includeSystem: true,
  startOn: "human",
  allowPartial: false,
  tokenCounter: (msgs) => msgs.reduce((n, m) => n + counted.get(m.id), 0),
});
const t2 = process.hrtime.bigint();

const n = kept.reduce((n, m) => n + counted.get(m.id), 0) + overhead;
const t3 = process.hrtime.bigint();
process.stdout.write(JSON.stringify({ ...body, messages: kept.map((m) => body.messages[Number(m.id)]) }) + "\n");
const t4 = process.hrtime.bigint();
process.stderr.write(JSON.stringify({
  input_tokens: overhead + [...counted.values()].reduce((a, b) => a + b, 0), output_tokens: n,
  messages: lc.length, kept: kept.length, parse_ms: ms(t0, t1), trim_ms: ms(t1, t2), write_ms: ms(t3, t4),
}) + "\n");

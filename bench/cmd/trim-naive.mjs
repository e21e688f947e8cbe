// A naive drop-oldest trimmer, the baseline pruneguard prune is measured
// against: read the body, count each message as a quarter of its JSON's
// length (the approximation pruneguard uses by default), drop the oldest
// messages that are not system messages until the body fits the budget,
// write the body. It knows nothing of tool calls: it may leave a tool
// result whose call it dropped.
//
//   node trim-naive.mjs BODY.json BUDGET > out.json
//
// One JSON line on stderr gives the tokens and the time of each phase.
import { readFileSync } from "node:fs";

const [file, budgetArg] = process.argv.slice(2);
const budget = Number(budgetArg);
const ms = (a, b) => Number(b - a) / 1e6;
const tokens = (v) => Math.ceil(JSON.stringify(v).length / 4);

const t0 = process.hrtime.bigint();
const body = JSON.parse(readFileSync(file, "utf8"));
const t1 = process.hrtime.bigint();

const msgs = body.messages;
const counts = msgs.map(tokens);
let total = tokens({ ...body, messages: [] }) + counts.reduce((a, b) => a + b, 0);
const input = total;
const drop = new Array(msgs.length).fill(false);
for (let i = 0; i < msgs.length && total > budget; i++) {
  if (msgs[i].role === "system") continue;
  drop[i] = true;
  total -= counts[i];
}
body.messages = msgs.filter((_, i) => !drop[i]);
const t2 = process.hrtime.bigint();

process.stdout.write(JSON.stringify(body) + "\n");
const t3 = process.hrtime.bigint();
process.stderr.write(JSON.stringify({
  input_tokens: input, output_tokens: total, messages: msgs.length, kept: body.messages.length,
  parse_ms: ms(t0, t1), trim_ms: ms(t1, t2), write_ms: ms(t2, t3),
}) + "\n");

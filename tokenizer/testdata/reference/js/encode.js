const fs = require('fs'), path = require('path');
// Encodes the corpus, every transcript and every JSON string in them,
// writing {case: {text, o200k_base: ids, cl100k_base: ids}} to the file
// named by the first argument. TestJS compares. The second argument picks
// the implementation: "tiktoken" (the default) is tiktoken's own Rust core
// built to WebAssembly; "js-tiktoken" is a port to JavaScript.
const impl = process.argv[3] || 'tiktoken';
let encs;
if (impl === 'tiktoken') {
  const {get_encoding} = require('tiktoken');
  const wrap = (e) => ({encode: (t) => Array.from(e.encode_ordinary(t))});
  encs = {o200k_base: wrap(get_encoding('o200k_base')), cl100k_base: wrap(get_encoding('cl100k_base'))};
} else {
  const {getEncoding} = require('js-tiktoken');
  const wrap = (e) => ({encode: (t) => e.encode(t, [], [])});
  encs = {o200k_base: wrap(getEncoding('o200k_base')), cl100k_base: wrap(getEncoding('cl100k_base'))};
}
const here = __dirname;
const root = path.join(here, '../../../../testdata/transcripts');
const cases = [];
for (const c of JSON.parse(fs.readFileSync(path.join(here, '../../corpus.json'),'utf8'))) cases.push(['corpus/'+c.name, c.Text ?? c.text]);
function walk(d){ for (const f of fs.readdirSync(d).sort()) { const p=path.join(d,f); if (fs.statSync(p).isDirectory()) walk(p); else if (/\.jsonl?$/.test(f)) files.push(p);} }
const files=[]; walk(root); files.sort();
function strings(v, out){ if (typeof v==='string') out.push(v); else if (Array.isArray(v)) v.forEach(x=>strings(x,out)); else if (v && typeof v==='object') for (const [k,x] of Object.entries(v)) { out.push(k); strings(x,out);} }
for (const p of files) {
  const raw = fs.readFileSync(p); // bytes
  const rel = path.relative(root,p);
  cases.push(['transcript/'+rel, raw.toString('utf8')]);
  const out=[]; const txt=raw.toString('utf8');
  if (p.endsWith('.jsonl')) txt.split('\n').filter(l=>l.trim()).forEach(l=>strings(JSON.parse(l),out)); else strings(JSON.parse(txt),out);
  out.forEach((s,i)=>cases.push(['strings/'+rel+'#'+i, s]));
}
// A third argument names a JSON file of more [{name, text}] cases.
if (process.argv[4]) for (const c of JSON.parse(fs.readFileSync(process.argv[4], 'utf8'))) cases.push(['extra/'+c.name, c.text]);
const res = {};
for (const [name, text] of cases) { res[name] = {text}; for (const [en,e] of Object.entries(encs)) res[name][en] = e.encode(text); }
fs.writeFileSync(process.argv[2], JSON.stringify(res));
console.log(cases.length);

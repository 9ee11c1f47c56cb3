// make_synthetic_tokenizers.mjs - writes the two synthetic tokenizer.json
// files used by the tokenizer tests (Inputs/glm_synthetic.tokenizer.json and
// Inputs/gpt2_synthetic.tokenizer.json).
//
// Both share one small byte-level BPE vocabulary: the 256 byte characters
// plus merges learned here, deterministically, from GSM8K training text
// (read from ../shared/data/gsm8k/train.jsonl, not committed) and a few
// multilingual lines. The GLM file has GLM-4-style special tokens, the GLM /
// GPT-4 Split regex, a Sequence[NFC] normalizer, "a b" merges, and a few
// test-only added tokens exercising lstrip / rstrip / single_word /
// normalized. The GPT-2 file uses ByteLevel(use_regex, add_prefix_space),
// ["a", "b"] merges, ignore_merges and no normalizer.
//
// Usage: node make_synthetic_tokenizers.mjs <train.jsonl> <out-dir> [merges]

import fs from 'node:fs';
import path from 'node:path';

const [trainPath, outDir, mergeArg] = process.argv.slice(2);
if (!trainPath || !outDir) {
  console.error('usage: node make_synthetic_tokenizers.mjs <train.jsonl> <out-dir> [merges]');
  process.exit(2);
}
const numMerges = Number(mergeArg ?? 1500);

// GPT-2 bytes_to_unicode.
const byteChars = [];
{
  const printable = (b) => (b >= 33 && b <= 126) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  for (let b = 0; b < 256; ++b) byteChars.push(String.fromCodePoint(printable(b) ? b : next++));
}
const toByteLevel = (s) => Array.from(Buffer.from(s, 'utf8'), (b) => byteChars[b]).join('');

const GLM_REGEX = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// The same pattern in JavaScript syntax, only to cut training words.
const jsRegex = /'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

const corpus = [];
const lines = fs.readFileSync(trainPath, 'utf8').split('\n').filter(Boolean).slice(0, 3000);
for (const line of lines) {
  const row = JSON.parse(line);
  corpus.push(row.question, row.answer);
}
const extra = [
  '你好，世界。今天天气很好，我们去公园散步吧。数学题：小明有十二个苹果。',
  '日本語のテキストも少し入れます。東京は大きな都市です。',
  '한국어 문장도 조금 넣습니다. 안녕하세요.',
  'Café, naïve, résumé, façade, Ångström, Straße, smörgåsbord.',
  'Emoji 🙂🙂 👍🏽 👨‍👩‍👧 and symbols ≤ ≥ ± × ÷ → ∞.',
];
for (let i = 0; i < 40; ++i) corpus.push(...extra);

const wordCounts = new Map();
for (const text of corpus) {
  for (const m of text.normalize('NFC').matchAll(jsRegex)) {
    const w = toByteLevel(m[0]);
    wordCounts.set(w, (wordCounts.get(w) ?? 0) + 1);
  }
}
// Words as arrays of symbols.
const words = [...wordCounts.entries()].map(([w, c]) => ({ syms: Array.from(w), count: c }));

const vocab = new Map();
for (const ch of byteChars) vocab.set(ch, vocab.size);
const merges = [];
for (let step = 0; step < numMerges; ++step) {
  const pairCounts = new Map();
  for (const { syms, count } of words) {
    for (let i = 0; i + 1 < syms.length; ++i) {
      const key = syms[i] + '\u0000' + syms[i + 1];
      pairCounts.set(key, (pairCounts.get(key) ?? 0) + count);
    }
  }
  let best = null, bestCount = 1;
  for (const [key, count] of pairCounts) {
    if (count > bestCount || (count === bestCount && best !== null && key < best)) {
      best = key;
      bestCount = count;
    }
  }
  if (best === null) break;
  const [a, b] = best.split('\u0000');
  const merged = a + b;
  merges.push([a, b]);
  if (!vocab.has(merged)) vocab.set(merged, vocab.size);
  for (const w of words) {
    const out = [];
    for (let i = 0; i < w.syms.length; ++i) {
      if (i + 1 < w.syms.length && w.syms[i] === a && w.syms[i + 1] === b) {
        out.push(merged);
        ++i;
      } else {
        out.push(w.syms[i]);
      }
    }
    w.syms = out;
  }
}

const addedToken = (id, content, flags = {}) => ({
  id, content,
  single_word: flags.single_word ?? false,
  lstrip: flags.lstrip ?? false,
  rstrip: flags.rstrip ?? false,
  normalized: flags.normalized ?? false,
  special: flags.special ?? true,
});
const glmSpecials = [
  '<|endoftext|>', '[MASK]', '[gMASK]', '[sMASK]', '<sop>', '<eop>', '<|system|>', '<|user|>',
  '<|assistant|>', '<|observation|>', '<|begin_of_image|>', '<|end_of_image|>',
  '<|begin_of_video|>', '<|end_of_video|>', '<think>', '</think>', '<tool_call>', '</tool_call>',
  '<tool_response>', '</tool_response>', '<arg_key>', '</arg_key>', '<arg_value>', '</arg_value>',
  '/nothink',
];
let nextId = vocab.size;
const glmAdded = glmSpecials.map((c) => addedToken(nextId++, c));
// Test-only tokens, one per flag combination the matcher implements.
glmAdded.push(addedToken(nextId++, '<|lstrip|>', { lstrip: true }));
glmAdded.push(addedToken(nextId++, '<|rstrip|>', { rstrip: true }));
glmAdded.push(addedToken(nextId++, '<|strip|>', { lstrip: true, rstrip: true }));
glmAdded.push(addedToken(nextId++, 'hello', { single_word: true, special: false }));
glmAdded.push(addedToken(nextId++, 'cafe\u0301', { normalized: true, special: false }));
glmAdded.push(addedToken(nextId++, '世界', { special: false }));
glmAdded.push(addedToken(nextId++, '<| |>', { special: true }));
glmAdded.push(addedToken(nextId++, '[[a', { special: false }));
glmAdded.push(addedToken(nextId++, '[[ab', { special: false }));
glmAdded.push(addedToken(nextId++, 'Ω', { normalized: true, special: false, single_word: true }));

const vocabObject = Object.fromEntries(vocab);
const glm = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: glmAdded,
  normalizer: { type: 'Sequence', normalizers: [{ type: 'NFC' }] },
  pre_tokenizer: {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: GLM_REGEX }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: false },
    ],
  },
  post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: null,
    end_of_word_suffix: null, fuse_unk: false, byte_fallback: false, ignore_merges: false,
    vocab: vocabObject, merges: merges.map(([a, b]) => `${a} ${b}`),
  },
};

let gpt2Id = vocab.size;
const gpt2 = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [
    addedToken(gpt2Id++, '<|endoftext|>'),
    addedToken(gpt2Id++, '<|lstrip|>', { lstrip: true }),
    addedToken(gpt2Id++, 'hello', { single_word: true, special: false }),
  ],
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  post_processor: null,
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: {
    type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
    end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: true,
    vocab: vocabObject, merges,
  },
};

fs.writeFileSync(path.join(outDir, 'glm_synthetic.tokenizer.json'), JSON.stringify(glm) + '\n');
fs.writeFileSync(path.join(outDir, 'gpt2_synthetic.tokenizer.json'), JSON.stringify(gpt2) + '\n');
console.log(`vocab ${vocab.size}, merges ${merges.length}, glm added ${glmAdded.length}`);

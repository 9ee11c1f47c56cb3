#!/usr/bin/env python3
"""Writes a tokenizer.json with one printable token per id of a vocabulary.

Serving benchmarks of procedural (random-weight) models at real width need a
tokenizer whose vocabulary covers the model's ids (154,880 for GLM-5.3-Flash)
so that strata-serve can stream every generated token as text and
strata-bench-serve can time it (docs/BenchServe.md); the real GLM tokenizer is
not part of the repository. Ids 0-255 are the byte-level bytes; id i >= 256
decodes to " t<i>". BPE without merges, byte-level pre-tokenizer and decoder
(the format of runtime/tokenizer); no special tokens.

Usage: make_bench_tokenizer.py --vocab-size N --out tokenizer.json
"""
import argparse, json


def bytes_to_unicode():
    # GPT-2's byte-level alphabet (what Hugging Face's ByteLevel uses).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


ap = argparse.ArgumentParser()
ap.add_argument("--vocab-size", type=int, required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()
if args.vocab_size <= 256:
    raise SystemExit("make_bench_tokenizer.py: --vocab-size must exceed 256")
alphabet = bytes_to_unicode()
vocab = {alphabet[b]: b for b in range(256)}
space = alphabet[ord(" ")]
for i in range(256, args.vocab_size):
    vocab[f"{space}t{i}"] = i
tokenizer = {
    "version": "1.0",
    "truncation": None,
    "padding": None,
    "added_tokens": [],
    "normalizer": None,
    "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    "post_processor": None,
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
              "merges": []},
}
with open(args.out, "w") as f:
    json.dump(tokenizer, f, ensure_ascii=False)

#!/usr/bin/env python3
"""Write a procedural glm5_next checkpoint folder (docs/ProceduralWeights.md, "File layout").

Python twin of the C++ strata-write-checkpoint: same tensors, same bytes.

  python3 write_checkpoint.py --config models/glm5_next/configs/glm5-tiny-bf16.json \
      --out /tmp/tiny-bf16 [--max-shard-bytes N]

Output folder:
  config.json                          byte copy of --config
  model-%05d-of-%05d.safetensors       tensors in byte-wise lexicographic name order,
                                       shards filled greedily up to --max-shard-bytes
  model.safetensors.index.json         {"metadata":{"total_size":..},"weight_map":{..}}

Tensor data bytes (not headers) count towards --max-shard-bytes and total_size.
Runs under Debian's /usr/bin/python3 with numpy only.
"""

import argparse
import json
import os
import shutil
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import procedural as pw  # noqa: E402

DEFAULT_MAX_SHARD_BYTES = 5_000_000_000


def stored_tensors(cfg):
    """[(name, dtype, shape, source)] of every stored tensor, sorted byte-wise by name."""
    items = pw.expand_fp8(pw.tensor_manifest(cfg))
    return sorted(items, key=lambda it: it[0].encode("utf-8"))


def tensor_data(cfg_items):
    """Yield (name, dtype, shape, bytes) in write order; fp8 pairs computed once."""
    fp8_cache = {}
    for name, dtype, shape, source in cfg_items:
        if dtype == pw.F8 or (source != name):
            if source not in fp8_cache:
                src_shape = next(s for n, d, s, src in cfg_items if n == source)
                q, _, _, s = pw.fp8_tensors(source, src_shape)
                fp8_cache[source] = (q, s)
            q, s = fp8_cache[source]
            data = q if name == source else s
            # Free the pair once both halves were emitted (names sort as <w>.weight < <w>.weight_scale_inv).
            if name != source:
                del fp8_cache[source]
        else:
            data = pw.tensor_bytes(name, shape, dtype)
        yield name, dtype, shape, data


def plan_shards(items, max_shard_bytes):
    """Greedy shard assignment: list of lists of item indices."""
    shards, cur, cur_bytes = [], [], 0
    for i, (_, dtype, shape, _) in enumerate(items):
        n = pw.DTYPE_SIZE[dtype]
        for s in shape:
            n *= s
        if cur and cur_bytes + n > max_shard_bytes:
            shards.append(cur)
            cur, cur_bytes = [], 0
        cur.append(i)
        cur_bytes += n
    if cur:
        shards.append(cur)
    return shards


def safetensors_header(entries):
    """Compact JSON header padded with spaces to a multiple of 8 bytes.

    entries: [(name, dtype, shape, begin, end)] in write order.
    """
    parts = ['"__metadata__":{"format":"pt"}']
    for name, dtype, shape, b, e in entries:
        parts.append(
            "%s:{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%d,%d]}"
            % (json.dumps(name), dtype, ",".join(str(int(x)) for x in shape), b, e)
        )
    header = ("{" + ",".join(parts) + "}").encode("utf-8")
    header += b" " * ((-len(header)) % 8)
    return header


def write_checkpoint(config_path, out_dir, max_shard_bytes=DEFAULT_MAX_SHARD_BYTES):
    with open(config_path, "rb") as f:
        raw = f.read()
    cfg = json.loads(raw)
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(config_path, os.path.join(out_dir, "config.json"))

    items = stored_tensors(cfg)
    shards = plan_shards(items, max_shard_bytes)
    n_shards = len(shards)
    weight_map = {}
    total = 0
    gen = tensor_data(items)
    for si, idxs in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (si + 1, n_shards)
        blobs, entries, off = [], [], 0
        for _ in idxs:
            name, dtype, shape, data = next(gen)
            entries.append((name, dtype, shape, off, off + len(data)))
            blobs.append(data)
            off += len(data)
            weight_map[name] = fname
        total += off
        header = safetensors_header(entries)
        with open(os.path.join(out_dir, fname), "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for b in blobs:
                f.write(b)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True))
        f.write("\n")
    return n_shards, len(items), total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="glm5_next config.json (copied verbatim)")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument(
        "--max-shard-bytes",
        type=int,
        default=DEFAULT_MAX_SHARD_BYTES,
        help="tensor-data bytes per shard before a new one starts (default %(default)s)",
    )
    args = ap.parse_args(argv)
    if args.max_shard_bytes <= 0:
        print("error: --max-shard-bytes must be positive", file=sys.stderr)
        return 2
    n_shards, n_tensors, total = write_checkpoint(args.config, args.out, args.max_shard_bytes)
    print("wrote %s: %d tensors, %d shards, %d bytes" % (args.out, n_tensors, n_shards, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())

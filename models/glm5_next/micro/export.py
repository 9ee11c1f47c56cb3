#!/usr/bin/env python3
"""Write GLM-5.3-Flash-micro weights as a checkpoint folder in the real HF layout (numpy only).

The trainer hands over fp32 master values, one array per *logical* tensor of the config's manifest
(reference/procedural.py tensor_manifest: names, shapes, dtypes). Each is stored exactly as
reference/write_checkpoint.py stores procedural values: F32 as is, BF16 round-to-nearest-even, F8_E4M3 as
128x128-block-quantized e4m3fn + F32 `weight_scale_inv` (procedural.fp8_block_quantize); tensors in
byte-wise name order, shards filled greedily up to max_shard_bytes of tensor data, then
model.safetensors.index.json and a byte copy of config.json. So a model trained here loads with the same
code paths (glm5_ref.load_checkpoint, the C++ loader) as the procedural checkpoints; `--procedural`
writes procedural master values, which export.test compares byte for byte with write_checkpoint.py.

  python3 export.py --config config.json --out DIR --procedural [--max-shard-bytes N]
  (library) export_checkpoint(config_path, {name: np.float32 array}, out_dir, max_shard_bytes)
"""

import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import procedural as pw  # noqa: E402
import write_checkpoint as wc  # noqa: E402

DEFAULT_MAX_SHARD_BYTES = 10 * 1024 * 1024


def stored_bytes(items, values):
    """Yield (name, dtype, shape, bytes) for stored items from the logical master values."""
    fp8 = {}
    for name, dtype, shape, source in items:
        v = values[source]
        if dtype == pw.F8 or source != name:
            if source not in fp8:
                q, s = pw.fp8_block_quantize(v)
                fp8[source] = (q.tobytes(), s.astype("<f4").tobytes())
            q, s = fp8[source]
            data = q if name == source else s
            if name != source:
                del fp8[source]
        elif dtype == pw.F32:
            data = v.astype("<f4").tobytes()
        elif dtype == pw.BF16:
            data = pw.bf16_bits(v).astype("<u2").tobytes()
        else:
            raise ValueError("unsupported dtype %s for %s" % (dtype, name))
        yield name, dtype, shape, data


def check_values(cfg, values):
    """Every manifest tensor present with its shape, finite, float32; nothing extra."""
    manifest = pw.tensor_manifest(cfg)
    names = {n for n, _, _ in manifest}
    extra = sorted(set(values) - names)
    if extra:
        raise ValueError("tensors not in the manifest: %s" % ", ".join(extra[:5]))
    for name, _, shape in manifest:
        if name not in values:
            raise ValueError("missing tensor %s" % name)
        v = values[name]
        if list(v.shape) != list(shape):
            raise ValueError("%s: expected shape %s, got %s" % (name, shape, list(v.shape)))
        if v.dtype != np.float32 or not np.isfinite(v).all():
            raise ValueError("%s: expected finite float32 values" % name)


def export_checkpoint(config_path, values, out_dir, max_shard_bytes=DEFAULT_MAX_SHARD_BYTES):
    with open(config_path) as f:
        cfg = json.load(f)
    check_values(cfg, values)
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(config_path, os.path.join(out_dir, "config.json"))
    items = wc.stored_tensors(cfg)
    shards = wc.plan_shards(items, max_shard_bytes)
    gen = stored_bytes(items, values)
    weight_map, total = {}, 0
    for si, idxs in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (si + 1, len(shards))
        blobs, entries, off = [], [], 0
        for _ in idxs:
            name, dtype, shape, data = next(gen)
            entries.append((name, dtype, shape, off, off + len(data)))
            blobs.append(data)
            off += len(data)
            weight_map[name] = fname
        total += off
        header = wc.safetensors_header(entries)
        with open(os.path.join(out_dir, fname), "wb") as f:
            f.write(struct.pack("<Q", len(header)))
            f.write(header)
            for b in blobs:
                f.write(b)
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    with open(os.path.join(out_dir, "model.safetensors.index.json"), "w") as f:
        f.write(json.dumps(index, indent=2, sort_keys=True))
        f.write("\n")
    return len(shards), len(items), total


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--procedural", action="store_true", help="export procedural master values")
    ap.add_argument("--max-shard-bytes", type=int, default=DEFAULT_MAX_SHARD_BYTES)
    args = ap.parse_args(argv)
    if not args.procedural:
        print("error: only --procedural is available from the command line; train.py calls "
              "export_checkpoint", file=sys.stderr)
        return 2
    with open(args.config) as f:
        cfg = json.load(f)
    values = {n: pw.master_values(n, s) for n, _, s in pw.tensor_manifest(cfg)}
    n_shards, n_tensors, total = export_checkpoint(args.config, values, args.out, args.max_shard_bytes)
    print("wrote %s: %d tensors, %d shards, %d bytes" % (args.out, n_tensors, n_shards, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Independent numpy twin of docs/ProceduralWeights.md, for lit tests.

Usage: procedural_twin.py DIR MAX_SHARD_BYTES [--print-file F]

Takes the tensor list (names, dtypes, shapes) from DIR's shard headers, then
rebuilds every file of the checkpoint from the document alone (element
values, bf16/fp8 rounding, FP8 block scales, name order, greedy sharding,
header JSON and padding, index.json formatting) and compares bytes. With
--print-file, also checks `strata-write-checkpoint --print` lines ("NAME[I] =
V") against the twin's values. Prints "twin: N files identical" on success.
"""
import json
import os
import struct
import sys

import numpy as np

M64 = (1 << 64) - 1


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & M64
    return h


def splitmix64(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def role(name, shape):
    ends = name.endswith
    if ends("norm.weight") or ends("layernorm.weight"):
        return 0.1, 1.0
    if ends("norm.bias"):
        return 0.1, 0.0
    if ends("A_log") or ends("dt_bias"):
        return 1.0, 0.0
    if ends("conv1d.weight"):
        return 0.5, 0.0
    if ends("_base"):
        return 1.0, 0.0
    if ends("_scale"):
        return 0.5, 1.0
    if ends("e_score_correction_bias"):
        return 0.1, 0.0
    if ends("index_kpool_compress_ape") or ends("embed_tokens.weight"):
        return 1.0, 0.0
    if len(shape) == 2:
        return float(np.float32(1.0 / np.sqrt(np.float64(shape[1])))), 0.0
    return 1.0, 0.0


def master(name, shape):
    n = int(np.prod(shape, dtype=np.int64))
    amplitude, offset = role(name, shape)
    with np.errstate(over="ignore"):
        z = splitmix64(np.uint64(fnv1a64(name)) + np.arange(n, dtype=np.uint64))
    m = (z >> np.uint64(40)).astype(np.int64) - (1 << 23)
    c = np.float32(amplitude) * np.float32(2.0 ** -23)
    product = m.astype(np.float32) * c  # fp32 multiply, RNE
    return (product + np.float32(offset)).astype(np.float32)  # fp32 add


def to_bf16(v):
    bits = v.view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


# All non-negative finite e4m3fn values, increasing with the code.
E4M3 = np.array(
    [(m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
     for e in range(16) for m in range(8)][:127], dtype=np.float64)


def to_e4m3(x):
    """fp32 -> e4m3fn codes: nearest, ties to even code, saturating."""
    a = np.minimum(np.abs(x.astype(np.float64)), 448.0)
    hi = np.clip(np.searchsorted(E4M3, a), 0, 126)
    lo = np.clip(hi - 1, 0, 126)
    dlo, dhi = a - E4M3[lo], E4M3[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi,
                                            np.where(lo % 2 == 0, lo, hi)))
    return (pick | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def fp8(name, shape):
    v = master(name, shape).reshape(shape)
    rows, cols = shape
    codes = np.zeros(shape, dtype=np.uint8)
    scales = np.zeros(((rows + 127) // 128, (cols + 127) // 128), np.float32)
    for bi in range(scales.shape[0]):
        for bj in range(scales.shape[1]):
            blk = v[bi * 128:(bi + 1) * 128, bj * 128:(bj + 1) * 128]
            amax = np.max(np.abs(blk))
            s = np.float32(1.0) if amax == 0 else np.float32(amax) / np.float32(448.0)
            scales[bi, bj] = s
            codes[bi * 128:(bi + 1) * 128, bj * 128:(bj + 1) * 128] = to_e4m3(
                (blk / s).astype(np.float32))
    return codes, scales


def read_headers(d):
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    specs = {}
    for f in sorted(set(index["weight_map"].values())):
        with open(os.path.join(d, f), "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(n))
        for name, e in header.items():
            if name != "__metadata__":
                specs[name] = (e["dtype"], e["shape"])
    return specs


SIZES = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def main():
    d, limit = sys.argv[1], int(sys.argv[2])
    specs = read_headers(d)
    data, values = {}, {}
    for name, (dtype, shape) in specs.items():
        if name.endswith("_scale_inv"):
            continue
        if dtype == "F8_E4M3":
            codes, scales = fp8(name, shape)
            data[name] = codes.tobytes()
            data[name + "_scale_inv"] = scales.tobytes()
            values[name] = codes
        elif dtype == "BF16":
            bf = to_bf16(master(name, shape))
            data[name] = bf.tobytes()
            values[name] = bf
        else:
            data[name] = master(name, shape).tobytes()
            values[name] = master(name, shape)
    names = sorted(specs, key=lambda s: s.encode("utf-8"))
    shards = []
    for name in names:
        size = len(data[name])
        assert size == SIZES[specs[name][0]] * int(np.prod(specs[name][1]))
        if not shards or (shards[-1] and sum(len(data[x]) for x in shards[-1]) + size > limit):
            shards.append([])
        shards[-1].append(name)
    files = {}
    for i, shard in enumerate(shards):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        header = '{"__metadata__":{"format":"pt"}'
        off = 0
        for name in shard:
            dtype, shape = specs[name]
            header += ',"%s":{"dtype":"%s","shape":[%s],"data_offsets":[%d,%d]}' % (
                name, dtype, ",".join(str(s) for s in shape), off, off + len(data[name]))
            off += len(data[name])
        header += "}"
        header += " " * ((8 - len(header) % 8) % 8)
        files[fname] = (struct.pack("<Q", len(header)) + header.encode()
                        + b"".join(data[x] for x in shard))
    weight_map = {n: "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
                  for i, s in enumerate(shards) for n in s}
    index = {"metadata": {"total_size": sum(len(b) for b in data.values())},
             "weight_map": weight_map}
    files["model.safetensors.index.json"] = (
        json.dumps(index, indent=2, sort_keys=True) + "\n").encode()
    for fname, expected in files.items():
        got = open(os.path.join(d, fname), "rb").read()
        if got != expected:
            at = next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b),
                      min(len(got), len(expected)))
            sys.exit("twin: %s differs at byte %d (sizes %d vs %d)" %
                     (fname, at, len(got), len(expected)))
    if "--print-file" in sys.argv:
        lines = open(sys.argv[sys.argv.index("--print-file") + 1]).read().split("\n")
        checked = 0
        for line in filter(None, lines):
            lhs, v = line.split(" = ")
            name, i = lhs[:-1].split("[")
            want = values[name].reshape(-1)[int(i)]
            if specs[name][0] == "BF16":
                want = np.array([int(want) << 16], np.uint32).view(np.float32)[0]
            elif specs[name][0] == "F8_E4M3":
                want = np.float32(E4M3[want & 0x7F] * (-1 if want & 0x80 else 1))
            if np.float32(float(v)) != np.float32(want):
                sys.exit("twin: %s: printed %s, expected %r" % (lhs, v, float(want)))
            checked += 1
        print("twin: %d printed values match" % checked)
    print("twin: %d files identical" % len(files))


if __name__ == "__main__":
    main()

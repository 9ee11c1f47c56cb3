#!/usr/bin/env python3
"""Rewrites one field of a strata artifact and fixes its checksum, so that the loader's
semantic checks (not the checksum) are what rejects it. Test-only.

  patch_artifact.py IN OUT --format-version N
  patch_artifact.py IN OUT --target NAME      (first TargetDef's target: cpu gfx942 gfx950 sm_90)

Field numbers follow runtime/schemas/strata_artifact_def.fbs: ArtifactDef.format_version is
field 0, checksum field 2, targets field 4; TargetDef.target is field 0.
"""
import argparse
import struct

TARGETS = {"cpu": 0, "gfx942": 1, "gfx950": 2, "sm_90": 3}


def field(buf, table, index):
    """Absolute offset of field `index` of the table at `table` (0 if absent)."""
    vtable = table - struct.unpack_from("<i", buf, table)[0]
    vsize = struct.unpack_from("<H", buf, vtable)[0]
    if 4 + 2 * index >= vsize:
        return 0
    off = struct.unpack_from("<H", buf, vtable + 4 + 2 * index)[0]
    return table + off if off else 0


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--format-version", type=int)
    ap.add_argument("--target", choices=sorted(TARGETS))
    args = ap.parse_args()
    buf = bytearray(open(args.input, "rb").read())
    root = struct.unpack_from("<I", buf, 0)[0]
    if args.format_version is not None:
        struct.pack_into("<I", buf, field(buf, root, 0), args.format_version)
    if args.target is not None:
        vec_ref = field(buf, root, 4)
        vec = vec_ref + struct.unpack_from("<I", buf, vec_ref)[0]
        first = vec + 4 + struct.unpack_from("<I", buf, vec + 4)[0]
        buf[field(buf, first, 0)] = TARGETS[args.target]
    checksum = field(buf, root, 2)
    struct.pack_into("<Q", buf, checksum, 0)
    struct.pack_into("<Q", buf, checksum, fnv1a64(bytes(buf)))
    open(args.output, "wb").write(bytes(buf))


if __name__ == "__main__":
    main()

"""Checks gpu_ir_interpreter.py on the hand-written kernels of
interpreter-kernels.mlir (generic form on argv[1]): every shuffle mode with its
valid flag at subgroups of 32, a barrier with a workgroup row, an atomic add,
i32 wrap-around and unsigned division, an scf.while loop carrying two values,
e4m3 codes decoded with integer vector ops (extui, andi, shli, addi, ori,
shrui, uitofp, bitcast, cmpi ult, select: MatmulKernel.cpp's decodeFp8ToF32)
against the e4m3 table, nvgpu.ldmatrix x4 plain and transposed against the
PTX ISA's fragment table, asynchronous copies (zero fill, groups landing at
their wait), mbarriers (arrivals, parity waits, an arrival as copies
complete; a wait that cannot complete refused); a barrier that half the
block skips is refused."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from gpu_ir_interpreter import (  # noqa: E402
    _FP8_FN, InterpreterError, load_kernel)

path = sys.argv[1]
out = np.zeros((64, 6), np.int32)
total = np.zeros(1, np.int32)
load_kernel(path, "lanes").run([out, total], grid=(1, 1, 1), subgroup_size=32)
lane = np.arange(64) % 32
base = np.arange(64) - lane
expect = np.stack([
    base + (lane ^ 1),
    np.where(lane >= 3, np.arange(64) - 3, -1),
    np.where(lane + 5 < 32, np.arange(64) + 5, -1),
    base + 7,
    (63 - np.arange(64)) ** 2,
    ((2147483647 + np.arange(64) + 2**31) % 2**32 - 2**31) ^
    ((2**32 - 8) // 3 - 2**32 * (((2**32 - 8) // 3) >= 2**31)),
], axis=1).astype(np.int64)
print("lanes:", "equal" if np.array_equal(out.astype(np.int64), expect)
      else f"DIFFERS\n{out}\n{expect}")
print("atomic total:", int(total[0]), "expected", sum(range(64)))
steps = np.zeros(8, np.int32)
load_kernel(path, "collatz").run([steps], grid=(1, 1, 1), subgroup_size=32)
print("collatz steps:", steps.tolist())
codes = np.array([0x00, 0x01, 0x07, 0x08, 0x38, 0x7E, 0x80, 0xB8], np.uint8)
decoded = np.zeros(8, np.float32)
tops = np.zeros(8, np.uint32)
load_kernel(path, "fp8_decode").run([codes, decoded, tops], grid=(1, 1, 1),
                                    subgroup_size=32)
want = _FP8_FN[codes].astype(np.float32)
same = np.array_equal(decoded.view(np.uint32), want.view(np.uint32))
print("fp8 decode:", "equal" if same else f"DIFFERS {decoded} {want}",
      "tops:", tops.tolist())
# ldmatrix x4: lanes 8 i .. 8 i + 7 address the rows of matrix i; lane l
# receives values 2 (l % 4), 2 (l % 4) + 1 of row l / 4 of each matrix, or
# transposed rows 2 (l % 4), 2 (l % 4) + 1 of column l / 4 (PTX ISA, ldmatrix).
rows = np.arange(256, dtype=np.uint16).reshape(32, 8) + np.uint16(0x3F00)
plain = np.zeros((32, 8), np.uint16)
trans = np.zeros((32, 8), np.uint16)
load_kernel(path, "ldmatrix").run([rows, plain, trans], grid=(1, 1, 1),
                                  subgroup_size=32)
want_plain = np.zeros((32, 8), np.uint16)
want_trans = np.zeros((32, 8), np.uint16)
for lane in range(32):
    g, t = divmod(lane, 4)
    for i in range(4):
        for j in range(2):
            want_plain[lane, 2 * i + j] = rows[8 * i + g, 2 * t + j]
            want_trans[lane, 2 * i + j] = rows[8 * i + 2 * t + j, g]
print("ldmatrix:", "equal" if np.array_equal(plain, want_plain) and
      np.array_equal(trans, want_trans) else f"DIFFERS\n{plain}\n{trans}")
# Asynchronous copies: thread t copies t mod 9 of 8 values (the rest zero)
# in a first group and all 8 in a second; waiting for all but the newest
# group lands the first only, waiting for every group the second too.
out = np.full((32, 3, 8), 7, np.uint16)
load_kernel(path, "async_copies").run([rows, out], grid=(1, 1, 1),
                                      subgroup_size=32)
count = np.arange(32) % 9
first = np.where(np.arange(8)[None, :] < count[:, None], rows, 0)
print("async copies:", "equal" if np.array_equal(out[:, 0], first) and
      not out[:, 1].any() and np.array_equal(out[:, 2], rows)
      else f"DIFFERS\n{out}")
# mbarriers: warp 0 stores its rows and arrives on barrier 0, copies a row
# asynchronously and arrives on barrier 1 as the copy completes
# (cp.async.mbarrier.arrive.noinc), then waits on barrier 2; warp 1 waits
# for barriers 0 and 1 (parity 0), reads both rows, rewrites the first and
# arrives on barrier 2. In both thread orders.
for order in ("forward", "reverse"):
    os.environ["STRATA_INTERP_ORDER"] = "" if order == "forward" else order
    src = np.arange(100, 132, dtype=np.int32)
    got = np.zeros((32, 3), np.int32)
    load_kernel(path, "mbarriers").run([src, got], grid=(1, 1, 1),
                                       subgroup_size=32)
    same = (np.array_equal(got[:, 0], np.arange(32)) and
            np.array_equal(got[:, 1], src) and
            np.array_equal(got[:, 2], 2 * np.arange(32)))
    print(f"mbarriers ({order}):", "equal" if same else f"DIFFERS\n{got}")
os.environ["STRATA_INTERP_ORDER"] = ""
try:
    load_kernel(path, "mbarrier_stuck").run([np.zeros(64, np.int32)],
                                            grid=(1, 1, 1), subgroup_size=32)
    print("mbarrier stuck: no error")
except InterpreterError as e:
    print("mbarrier stuck:", e)
try:
    load_kernel(path, "diverges").run([np.zeros(64, np.int32)],
                                      grid=(1, 1, 1), subgroup_size=32)
    print("diverges: no error")
except InterpreterError as e:
    print("diverges:", e)

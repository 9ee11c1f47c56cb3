"""Values shared by the GPU-IR interpreter's kernel drivers (run_*.py next
to the tests): bf16 rounding as the kernels store it, the generic kernels'
sigmoid and a step's per-request index arrays, in numpy.
"""

import numpy as np


def to_bf16(a):
    """Round float32 values to bf16 bits (nearest, ties to even)."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    return ((bits >> 16) & 0xFFFF).astype(np.uint16)


def from_bf16(u):
    """bf16 bits as float32 values (exact)."""
    return (np.asarray(u, np.uint16).astype(np.uint32) << 16).view(np.float32)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def step_arrays(requests):
    """The i32 positions [T], seq_starts [R + 1], source slots [R] and (where
    every request names one, else None) destination slots [R] of a step of
    `requests`, each (tokens, first position, source slot[, destination
    slot])."""
    positions = np.concatenate(
        [np.arange(r[1], r[1] + r[0]) for r in requests]).astype(np.int32)
    starts = np.cumsum([0] + [r[0] for r in requests]).astype(np.int32)
    src = np.array([r[2] for r in requests], np.int32)
    dst = (np.array([r[3] for r in requests], np.int32)
           if all(len(r) > 3 for r in requests) else None)
    return positions, starts, src, dst

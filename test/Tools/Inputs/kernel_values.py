"""Values shared by the GPU-IR interpreter's kernel drivers (run_*.py next
to the tests): bf16 rounding as the kernels store it and the generic
kernels' sigmoid, in numpy.
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

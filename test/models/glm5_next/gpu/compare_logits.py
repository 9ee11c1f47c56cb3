"""Compares two logits dumps of the same prompts (strata-run --dump-logits):
rows whose top-1 token agrees, and per row the largest absolute difference
over that row's largest magnitude (median, 99th percentile, maximum).

    compare_logits.py A.npy B.npy LABEL
"""
import sys
import numpy as np
a = np.load(sys.argv[1], mmap_mode="r"); b = np.load(sys.argv[2], mmap_mode="r")
assert a.shape == b.shape, (a.shape, b.shape)
n = a.shape[0]; top = 0; rel = []
for i in range(0, n, 256):
    x = np.asarray(a[i:i + 256], np.float32); y = np.asarray(b[i:i + 256], np.float32)
    top += int((x.argmax(-1) == y.argmax(-1)).sum())
    rel.append(np.abs(x - y).max(-1) / np.abs(x).max(-1))
rel = np.concatenate(rel)
print(f"{sys.argv[3]}: rows {n}, top-1 {top / n:.4f}, diff / row max: median {np.median(rel):.2e}, "
      f"p99 {np.quantile(rel, 0.99):.2e}, max {rel.max():.2e}")

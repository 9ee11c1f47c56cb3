#!/usr/bin/env python3
"""Checks a strata-bench --matrix JSON against the model config it ran.

Per case: the floor is max(bytes / copy rate, FLOPs / GEMM rate) of the
case's own numbers, wall / floor is the wall time over it, the byte terms add
up, the routing was read back and every MoE layer's distinct experts are
between top-k (one token) and min(E, top-k x tokens) -- exactly top-k for a
decode step of one request. Prints one line per case and 'ok' or the
failures.

  check_matrix.py MATRIX.json CONFIG.json
"""
import json
import sys


def main():
    cases = json.load(open(sys.argv[1]))["cases"]
    text = json.load(open(sys.argv[2]))["text_config"]
    experts, top_k = text["n_routed_experts"], text["num_experts_per_tok"]
    moe_layers = sum(1 for k in text["mlp_layer_types"] if k == "sparse")
    failures = []
    for c in cases:
        r = c["roofline"]
        label = f'{c["step"]} B={c["requests"]} T={c["tokens"]} ctx={c["context"]}'
        floor = max(r["bytes"] / c["copy_bytes_per_second"],
                    r["flops"] / r["gemm_flops_per_second"] if r["gemm_flops_per_second"] else 0)
        if abs(floor - r["floor_seconds"]) > 1e-9 * max(floor, 1e-30) + 1e-15:
            failures.append(f"{label}: floor {r['floor_seconds']} != {floor}")
        if abs(c["step_wall_seconds"] / floor - r["wall_over_floor"]) > 1e-6 * r["wall_over_floor"]:
            failures.append(f"{label}: wall / floor")
        if abs(r["weight_bytes"] + r["expert_bytes"] + r["state_bytes"] - r["bytes"]) > 1e-6 * r["bytes"]:
            failures.append(f"{label}: byte terms")
        if not r["routing_read_back"] or r["moe_layers"] != moe_layers:
            failures.append(f"{label}: routing of {r['moe_layers']} layers, read back {r['routing_read_back']}")
        slots = c["requests"] * c["tokens"] * top_k
        per_layer = r["experts_per_layer"]
        if not (top_k <= per_layer <= min(experts, slots)):
            failures.append(f"{label}: {per_layer} experts per layer")
        if c["requests"] * c["tokens"] == 1 and per_layer != top_k:
            failures.append(f"{label}: one token routed to {per_layer} experts, not {top_k}")
        if r["flops"] <= 0 or r["weight_bytes"] <= 0 or r["state_bytes"] <= 0:
            failures.append(f"{label}: empty roofline")
        print(f"{label}: experts/layer {per_layer:g}")
    print("ok" if not failures else "\n".join(failures))


main()

"""Checks a strata-bench markdown table and its JSON: the kernel rows' shares
add up to 100 % (within rounding), their dispatch counts to the total row's,
and the JSON agrees with the table (kernels, dispatches, shares summing to 1).

Usage: check_table.py TABLE.md REPORT.json
"""
import json
import sys


def main():
    table, report = sys.argv[1], sys.argv[2]
    rows = [line for line in open(table) if line.startswith("| ")]
    header, kernels = rows[0], rows[1:]
    total = [r for r in kernels if r.startswith("| **total**")]
    kernels = [r for r in kernels if not r.startswith("| **total**")]
    assert len(total) == 1, "expected one total row"
    cells = lambda row: [c.strip() for c in row.strip().strip("|").split("|")]
    share = sum(float(cells(r)[3].rstrip("%")) for r in kernels)
    count = sum(int(cells(r)[1]) for r in kernels)
    total_count = int(cells(total[0])[1])
    data = json.load(open(report))
    json_share = sum(k["share"] for k in data["kernels"])
    print(f"kernels: {len(kernels)}")
    print(f"shares: {'ok' if abs(share - 100.0) < 0.05 * len(kernels) + 0.05 else 'BAD'} ({share:.1f}%)")
    print(f"dispatches: {'ok' if count == total_count == data['dispatches'] else 'BAD'} ({count})")
    print(f"json: {'ok' if len(data['kernels']) == len(kernels) and abs(json_share - 1.0) < 1e-9 and data['copy_bytes_per_second'] > 0 else 'BAD'}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Summarise Nsight Compute's SASS source counters of one kernel.

Input: the CSV that `ncu --section SourceCounters --section WarpStateStats
--page source --print-source sass --csv ...` prints (the profiled program's
own output and ncu's ==PROF== lines before it are skipped; the first kernel's
table is read). Output (markdown): where the kernel's warp stall samples and
executed instructions go by SASS opcode, the stall reasons, the hot loop (the
instructions executed at least --hot of the most executed one's count: one
iteration's instruction mix) and the instructions with the most samples.

Usage: ncu_source_summary.py SOURCE.csv [--top N] [--hot FRACTION]
"""

import argparse
import collections
import csv
import io
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def read_table(text):
    """The rows of the first kernel's table as dicts (header: "Address")."""
    start = text.find('"Address","Source"')
    if start < 0:
        sys.exit("ncu_source_summary.py: no source table (\"Address\",\"Source\" header) in the input")
    kernel = ""
    before = text.rfind('"Kernel Name"', 0, start)
    if before >= 0:
        kernel = next(csv.reader(io.StringIO(text[before:start])))[1]
    rows = []
    reader = csv.reader(io.StringIO(text[start:]))
    header = next(reader)
    for row in reader:
        if len(row) < len(header) or not row[0].startswith("0x"):
            break  # the next kernel's table or the end
        rows.append(dict(zip(header, row)))
    for column in ("Source", SAMPLES, EXECUTED):
        if column not in header:
            sys.exit(f"ncu_source_summary.py: column '{column}' missing")
    return kernel, header, rows


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    """The SASS mnemonic without predicate and modifiers: '@!PT LDS RZ' -> LDS."""
    words = [w for w in source.split() if not w.startswith("@")]
    return words[0].split(".")[0] if words else "?"


def percent(part, whole):
    return 100.0 * part / whole if whole else 0.0


def summarise(text, top, hot):
    kernel, header, rows = read_table(text)
    samples = sum(number(r[SAMPLES]) for r in rows)
    executed = sum(number(r[EXECUTED]) for r in rows)
    by_samples = collections.Counter()
    by_executed = collections.Counter()
    for r in rows:
        by_samples[opcode(r["Source"])] += number(r[SAMPLES])
        by_executed[opcode(r["Source"])] += number(r[EXECUTED])
    reasons = collections.Counter()
    for column in header:
        if column.startswith("stall_") and "Not Issued" not in column:
            reasons[column[len("stall_"):]] = sum(number(r[column]) for r in rows)
    out = [f"# `{kernel}`: SASS source counters", "",
           f"{len(rows)} instructions, {int(executed)} warp instructions executed, "
           f"{int(samples)} warp stall samples.", "",
           "| opcode | stall samples | executed |", "|---|---:|---:|"]
    for op, value in by_samples.most_common(top):
        out.append(f"| {op} | {percent(value, samples):.1f} % | "
                   f"{percent(by_executed[op], executed):.1f} % |")
    out += ["", "| stall reason | samples |", "|---|---:|"]
    for reason, value in reasons.most_common():
        if value > 0:
            out.append(f"| {reason} | {percent(value, samples):.1f} % |")
    most = max((number(r[EXECUTED]) for r in rows), default=0.0)
    loop = [r for r in rows if most and number(r[EXECUTED]) >= hot * most]
    mix = collections.Counter(opcode(r["Source"]) for r in loop)
    out += ["", f"Hot loop (executed at least {hot:g} x {int(most)} times): "
            f"{len(loop)} instructions, "
            + ", ".join(f"{op} {n}" for op, n in mix.most_common()), "",
            "| samples | instruction |", "|---:|---|"]
    ranked = sorted(rows, key=lambda r: -number(r[SAMPLES]))
    for r in ranked[:top]:
        out.append(f"| {percent(number(r[SAMPLES]), samples):.2f} % | "
                   f"`{' '.join(r['Source'].split())}` |")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--hot", type=float, default=0.9)
    args = parser.parse_args()
    with open(args.csv, encoding="utf-8", errors="replace") as f:
        sys.stdout.write(summarise(f.read(), args.top, args.hot))


if __name__ == "__main__":
    main()

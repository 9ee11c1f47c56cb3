"""Checks that docs/Tools.md shows what each tool's --help prints.

usage: check_tools_doc.py TOOLS.md BINDIR NAME...

TOOL is strata-NAME (names without the prefix, so that lit does not replace
them with the tools' paths). Every TOOL must have a marker line `<!-- help: TOOL -->` (or
`<!-- help: TOOL first N lines -->`) followed by a fenced code block. The
block must equal the output of `BINDIR/TOOL --help` (or its first N lines,
for a tool whose help lists every MLIR pass). Prints "TOOL: ok" per tool, or
the first differing line, and exits 1 on any difference.
"""

import re
import subprocess
import sys


def blocks(text):
    """{tool: (lines of the block, N or None)} for every help marker."""
    found = {}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"<!-- help: (\S+)(?: first (\d+) lines)? -->$", line)
        if not m:
            continue
        j = i + 1
        if j >= len(lines) or not lines[j].startswith("```"):
            sys.exit(f"{m.group(1)}: the marker is not followed by a code block")
        k = j + 1
        while k < len(lines) and not lines[k].startswith("```"):
            k += 1
        found[m.group(1)] = (lines[j + 1:k], int(m.group(2)) if m.group(2) else None)
    return found


def main():
    doc, bindir = sys.argv[1], sys.argv[2]
    tools = ["strata-" + name for name in sys.argv[3:]]
    found = blocks(open(doc, encoding="utf-8").read())
    failed = False
    for tool in tools:
        if tool not in found:
            print(f"{tool}: no '<!-- help: {tool} -->' block in {doc}")
            failed = True
            continue
        expected, first = found[tool]
        run = subprocess.run([f"{bindir}/{tool}", "--help"], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{tool}: --help exited with {run.returncode}")
            failed = True
            continue
        actual = [line.rstrip() for line in run.stdout.rstrip("\n").split("\n")]
        if first is not None:
            actual = actual[:first]
            if len(expected) != first:
                print(f"{tool}: the block has {len(expected)} lines, the marker says {first}")
                failed = True
                continue
        expected = [line.rstrip() for line in expected]
        if actual == expected:
            print(f"{tool}: ok")
            continue
        failed = True
        for n in range(max(len(actual), len(expected))):
            a = actual[n] if n < len(actual) else "<end>"
            e = expected[n] if n < len(expected) else "<end>"
            if a != e:
                print(f"{tool}: line {n + 1} differs\n  doc:    {e}\n  --help: {a}")
                break
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

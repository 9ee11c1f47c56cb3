"""Checks that each verifier message of the llm dialect has a negative test.

Usage: check_verifier_coverage.py SOURCE... TEST_FILE

A message is identified by its fixed text: the first string literal streamed
into emitOpError()/emitError() or passed to emitOpError("..."), or, for the shape helpers of LLMOps.cpp and
LLMTypes.cpp, the text they build from their literal `what` argument
("expected <what> shape", "expected <what> rank", ...). Every identified text
must occur in an expected-error line of TEST_FILE. Prints the count on
success; lists what is missing and exits 1 otherwise.
"""

import re
import sys

# helper call -> message templates built from its literal argument(s).
HELPERS = {
    "checkShape": ["expected {} shape"],
    "checkNormParam": ["expected {} shape"],
    "checkRank": ["expected {} rank"],
    "checkPositive": ["expected {} > 0"],
    "verifyPositive": ["expected {} > 0"],
    "checkSameType": ["expected {} type"],
    "verifyCacheElementType": ["{} element type must be"],
    "checkSwiglu": ["expected {}gate rank", "expected {}gate shape",
                    "expected {}up shape", "expected {}down shape"],
}
# checkMetadata always names its operands the same way.
METADATA = ["expected positions shape", "expected seq_starts rank",
            "expected slots rank", "expected block_table rank"]


def messages(source):
    text = re.sub(r"\s+", " ", source)
    found = set()
    for name, templates in HELPERS.items():
        for m in re.finditer(name + r'\((?:\*this|op|emitError), "([^"]*)"', text):
            for t in templates:
                found.add(t.format(m.group(1)))
    for m in re.finditer(r'emit(?:Op)?Error\((?:\) << )?"([^"]*)"', text):
        literal = m.group(1).strip()
        if literal and literal != "expected":
            found.add(literal)
    if "checkMetadata(*this" in text:
        found.update(METADATA)
    return found


def main():
    *sources, test = sys.argv[1:]
    wanted = set()
    for path in sources:
        with open(path) as f:
            wanted |= messages(f.read())
    with open(test) as f:
        errors = "\n".join(l for l in f if "expected-error" in l)
    missing = sorted(w for w in wanted if w not in errors)
    for w in missing:
        print(f"missing negative test for '{w}'", file=sys.stderr)
    if missing or not wanted:
        sys.exit(1)
    print(f"every verifier message is tested ({len(wanted)} messages)")


if __name__ == "__main__":
    main()

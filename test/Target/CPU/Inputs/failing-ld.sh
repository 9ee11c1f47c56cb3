#!/bin/sh
# A linker that always fails (link-failure.mlir).
echo "failing-ld: cannot link" >&2
exit 3

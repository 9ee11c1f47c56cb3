#!/bin/sh
# Copies strata tools and what they need to run on the H200 runner into a
# carry folder (docs/GPURun-H200.md): the tools, lib/ with their shared
# libraries outside glibc (fmt, stdc++, ...), glibc/ and the Debian 12 loader
# for hosts whose glibc is older (the runner scripts pick the loader only then).
# Usage: carry_bins.sh BUILD_BIN DEST TOOL...
set -eu
BIN=$1 DEST=$2; shift 2
mkdir -p "$DEST/lib" "$DEST/glibc"
for t in "$@"; do strip -o "$DEST/$t" "$BIN/$t"; done
for t in "$@"; do ldd "$BIN/$t"; done | awk '/=> \//{print $3}' | sort -u |
while read -r lib; do
  case $(basename "$lib") in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*) cp -L "$lib" "$DEST/glibc/" ;;
    libcuda*|libnvidia*) ;;
    *) cp -L "$lib" "$DEST/lib/" ;;
  esac
done
cp -L /lib64/ld-linux-x86-64.so.2 "$DEST/"

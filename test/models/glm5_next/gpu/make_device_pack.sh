#!/bin/sh
# Builds the one-file pack that run_device_call.sh takes (docs/GPURun-H200.md
# "One device call per job"): the run_all.sh carry (make_gpu_carry.sh) plus
# slice-art/ with the real-width slice artifacts slice-fp8.strata and
# slice-fp8-f32.strata, slice-fp8-unfused.strata (--fuse-hyper-connections=
# false, for AB="unfused new") and, when given, an older compiler's
# artifact as slice-fp8-old.strata (for AB="old new"); env EXTRA="NAME=PATH
# ..." adds more artifacts as slice-fp8-NAME.strata (AB="old NAME new");
# xz-packed. Every artifact has the targets COMPILE_TARGETS (default
# sm_90,sm_90a,cpu).
# Usage: make_device_pack.sh BUILD_BIN PACK.txz [OLD_SLICE_ARTIFACT]
#   then: device run `sh test/models/glm5_next/gpu/run_device_call.sh PACK.txz $OUT`
#   with the pack's folder carried.
set -eu
if [ $# -lt 2 ]; then
  echo "usage: make_device_pack.sh BUILD_BIN PACK.txz [OLD_SLICE_ARTIFACT]" >&2
  exit 2
fi
BIN=$(cd "$1" && pwd) PACK=$2 OLD=${3:-}
REPO=$(cd "$(dirname "$0")/../../../.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
sh "$REPO/test/models/glm5_next/gpu/make_gpu_carry.sh" "$BIN" "$WORK/gpu" > "$WORK/carry.log"
ART=$WORK/gpu/slice-art
mkdir -p "$ART"
CFG=$REPO/models/glm5_next/configs/glm5-slice-fp8.json
slice() {  # slice NAME FLAGS...
  name=$1; shift
  "$BIN/strata-compile" "$REPO/models/glm5_next/model.dsl" --config "$CFG" \
    --target ${COMPILE_TARGETS:-sm_90,sm_90a,cpu} "$@" -o "$ART/$name.strata" &
}
slice slice-fp8
slice slice-fp8-f32 --activation-type=f32
slice slice-fp8-unfused --fuse-hyper-connections=false
wait
[ -n "$OLD" ] && cp "$OLD" "$ART/slice-fp8-old.strata"
for extra in ${EXTRA:-}; do
  cp "${extra#*=}" "$ART/slice-fp8-${extra%%=*}.strata"
done
mkdir -p "$(dirname "$PACK")"
tar cJf "$PACK" -C "$WORK" gpu
ls -la "$PACK" "$ART"

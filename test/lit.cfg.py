# -*- Python -*-
# lit configuration of check-strata: FileCheck tests of the compiler and
# integration tests of the tools. Runtime unit tests run through Unit/.

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "STRATA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".dsl"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Unit", "lib"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.strata_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%shlibdir", config.mlir_lib_dir))
config.substitutions.append(("%rocm_toolkit", config.rocm_toolkit))
config.substitutions.append(("%cuda_toolkit", config.cuda_toolkit))
# The tiny bf16 model for sm_90, gfx942, gfx950 and the CPU, compiled once by
# the build (test/CMakeLists.txt): bf16.strata and isa/<chip>.{ptx,s,gpu.mlir}.
config.substitutions.append(("%tiny_gpu", config.tiny_gpu))
config.substitutions.append(("%strata_src_root", config.strata_src_root))
config.substitutions.append(("%strata_obj_root", config.strata_obj_root))

# Progress lines (runtime/base/progress.h) appear on stderr after 2 s of work,
# which a slow machine reaches in tests that check stderr: off here; the
# progress tests (test/Tools/progress.test) turn them on explicitly.
config.environment["STRATA_PROGRESS"] = "off"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.strata_tools_dir, config.llvm_tools_dir]
tools = [
    "strata-opt",
    ToolSubst("mlir-opt", unresolved="ignore"),
    ToolSubst("mlir-runner", unresolved="ignore"),
    ToolSubst("strata-compile", unresolved="ignore"),
    ToolSubst("strata-dsl-fuzzer", unresolved="ignore"),
    ToolSubst("strata-run", unresolved="ignore"),
    ToolSubst("strata-dump", unresolved="ignore"),
    ToolSubst("strata-artifact-build-test", unresolved="ignore"),
    ToolSubst("strata-artifact-run-test", unresolved="ignore"),
    ToolSubst("strata-write-checkpoint", unresolved="ignore"),
    ToolSubst("strata-serve", unresolved="ignore"),
    ToolSubst("strata-serve-test-server", unresolved="ignore"),
    ToolSubst("strata-sampling-check", unresolved="ignore"),
    ToolSubst("strata-eval", unresolved="ignore"),
    ToolSubst("strata-bench", unresolved="ignore"),
    ToolSubst("strata-bench-serve", unresolved="ignore"),
    ToolSubst("strata-batch", unresolved="ignore"),
    ToolSubst("strata-tokenize", unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

if os.path.exists(os.path.join(config.cuda_toolkit, "bin", "ptxas")):
    config.available_features.add("ptxas")
if os.path.exists("/usr/bin/python3"):
    config.substitutions.append(("%python", "/usr/bin/python3"))

# Transformers goldens of the dense-indexer tiny config, produced on the GPU
# machine (models/glm5_next/reference/make_goldens.py --configs dense) and
# committed when available.
if os.path.exists(os.path.join(config.strata_src_root, "test", "models", "glm5_next",
                               "goldens", "glm5-tiny-dense-bf16.safetensors")):
    config.available_features.add("dense-goldens")

# openai-npm: node is installed and scripts/install-deps.sh installed the
# `openai` npm package (openai-node) into the npm cache (STRATA_NPM_CACHE,
# default ~/.cache/strata/npm); without it the tests with the official OpenAI
# client are UNSUPPORTED, never failed.
npm_cache = os.environ.get("STRATA_NPM_CACHE") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
    "strata", "npm")
if shutil.which("node") and os.path.exists(
        os.path.join(npm_cache, "node_modules", "openai", "package.json")):
    config.available_features.add("openai-npm")
    config.substitutions.append(("%openai_npm", npm_cache))

# The real GSM8K files live beside the repository (../shared/data/gsm8k) and
# are not committed; STRATA_GSM8K_DIR overrides the location.
gsm8k_dir = os.environ.get(
    "STRATA_GSM8K_DIR",
    os.path.join(config.strata_src_root, "..", "shared", "data", "gsm8k"))
if os.path.exists(os.path.join(gsm8k_dir, "test.jsonl")):
    config.available_features.add("gsm8k-data")
    config.substitutions.append(("%gsm8k_dir", gsm8k_dir))

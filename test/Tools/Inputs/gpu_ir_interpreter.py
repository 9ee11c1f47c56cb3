"""Runs a SIMT kernel of a strata GPU module on the CPU, from its GPU-dialect IR.

strata-compile --gpu-isa-dir=DIR writes each GPU target's kernels, before the
binary pipeline, to DIR/<chip>.gpu.mlir in MLIR's generic op form. This module
parses one `gpu.func` of such a file and executes it for a grid of blocks, each
block's threads as Python generators: a thread runs until it reaches a
`gpu.barrier` (every thread of the block meets there) or a `gpu.shuffle`
(every lane of its subgroup meets at the same shuffle, which then exchanges
values, with the `valid` flag of MLIR's semantics), so the kernel's
synchronisation is executed as written, for the subgroup size of the chip the
IR was built for (32 on NVIDIA, 64 on AMD). It covers the arith, math, memref,
scf (for, if, while) and gpu operations of the SIMT kernels, 1-d vector loads, stores,
extracts, inserts, bitcasts, reductions and broadcasts (fp8 and i8 vectors
hold their bits as uint8; f32 -> e4m3 (FNUZ or OCP) truncation rounds to the
nearest, ties to even), `nvvm.convert.float.to.tf32` (rna), and the matrix
instructions `nvvm.mma.sync` m16n8k16 bf16 and m16n8k8 tf32 (the registers'
top 19 bits) and `amdgpu.mfma` (16x16 and 32x32, bf16 or e4m3; f32
16x16x4) as subgroup
collectives (every lane of the subgroup meets at the instruction, whose
fragments are laid out as the PTX ISA and AMD's matrix instruction tables
give them; the products summed in float64, rounded to f32 once), and
`nvgpu.ldmatrix` likewise. sm_90a's warpgroup instruction
`nvvm.wgmma.mma_async` (bf16, e4m3 or tf32 operands, f32 accumulators) is a
collective of 128 threads: it reads A (K-major) and B (K-major or MN-major)
from the dynamic workgroup memory through their matrix descriptors and
swizzles (address 0 at the arena's start, which the kernels align to 1024
bytes), and the bytes it read must not change before the thread's
`wgmma.wait_group` that completes it (an error otherwise: a write racing the
asynchronous read). `nvgpu.device_async_copy` reads its source at the copy
and lands in the destination when the thread's `device_async_wait`
completes its group (a read before that sees the old bytes), or at the copy
with STRATA_INTERP_ASYNC=early (so that a copy into bytes an in-flight wgmma
reads is caught). `nvgpu.mbarrier` groups (create, init, arrive, arrive.nocomplete,
get) are per block; `try_wait.parity P` suspends the thread until the phase of
parity P has completed, and `nvvm.cp.async.mbarrier.arrive.noinc` lands the
thread's earlier copies and arrives; a wait that can never complete (a
barrier two phases ahead of its waiter, or too few arrivals) is a deadlock
error. An operation it does not know is an error naming it. bf16 memrefs are numpy uint16 arrays holding the bits
(a bf16 value is an np.uint16; extf / truncf convert, ties to even). Global memrefs are
numpy arrays shared by every block, workgroup attributions fresh zeroed arrays
per block; integers wrap at their width, f32 values are numpy float32. A load
or store outside its memref is an error. Threads run in thread order between
synchronisations, or in reverse with STRATA_INTERP_ORDER=reverse: a kernel
whose result depends on which of several threads stores to one address last
(a race on the GPU) gives different results in the two orders.

A check that the IR's logic is what the kernel's documentation says, for each
subgroup size, on machines without a GPU; it says nothing about the binary
pipeline or the hardware (the GPU runs do).

    from gpu_ir_interpreter import load_kernel
    kernel = load_kernel("DIR/sm_90.gpu.mlir", "kpool_indexer_0")
    kernel.run([positions, scores, selection, counts], grid=(T, 1, 1))
"""

import itertools
import operator
import os
import re
import struct

import numpy as np


class InterpreterError(Exception):
    pass


# --------------------------------------------------------------------------
# Parsing the generic op form.

_OP = re.compile(
    r'^(?:(%[\w]+)(?::(\d+))?\s*=\s*)?"([\w.]+)"\(([^)]*)\)\s*(.*)$')
_BLOCK = re.compile(r'^\^bb\d+(?:\((.*)\))?:$')


class Op:
    __slots__ = ("name", "results", "operands", "props", "regions", "types",
                 "result_types")

    def __init__(self, name, results, operands, props):
        self.name = name
        self.results = results
        self.operands = operands
        self.props = props
        self.regions = []
        self.types = ""
        self.result_types = []


class Region:
    __slots__ = ("args", "arg_types", "ops")

    def __init__(self):
        self.args = []
        self.arg_types = []
        self.ops = []


def _split_top(text, sep=","):
    """Splits at `sep` outside <>, (), [] and {}."""
    parts, depth, cur = [], 0, []
    for i, ch in enumerate(text):
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}" and not (ch == ">" and text[i - 1:i] == "-"):
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _props(rest):
    """The `<{...}>` properties of an op line, as a string."""
    if not rest.startswith("<{"):
        return "", rest
    depth = 0
    for i, ch in enumerate(rest):
        if ch in "<{[(":
            depth += 1
        elif ch in ">}])" and not (ch == ">" and rest[i - 1] == "-"):
            depth -= 1
            if depth == 0:
                return rest[2:i - 1], rest[i + 1:].strip()
    raise InterpreterError("unterminated properties: " + rest)


def _result_types(types):
    """The result types of `: (operand types) -> result types`."""
    arrow = types.rfind("->")
    if arrow < 0:
        return []
    res = types[arrow + 2:].strip()
    if res.startswith("(") and res.endswith(")"):
        res = res[1:-1]
    return _split_top(res)


class _Parser:
    def __init__(self, lines):
        self.lines = [l.strip() for l in lines]
        self.i = 0

    def op(self):
        line = self.lines[self.i]
        self.i += 1
        m = _OP.match(line)
        if not m:
            raise InterpreterError("cannot parse line: " + line)
        res, count, name, operands, rest = m.groups()
        results = []
        if res:
            n = int(count) if count else 1
            results = [res] if n == 1 else [f"{res}#{k}" for k in range(n)]
        op = Op(name, results,
                [o.strip() for o in operands.split(",") if o.strip()], "")
        op.props, rest = _props(rest.strip())
        if rest.startswith("({"):
            while True:
                op.regions.append(self.region())
                closing = self.lines[self.i - 1]
                if closing.startswith("}, {"):
                    continue
                rest = closing[2:].strip()  # after "})"
                break
        if rest.startswith("{"):  # discardable attributes
            depth = 0
            for k, ch in enumerate(rest):
                depth += ch == "{"
                depth -= ch == "}"
                if depth == 0:
                    op.props += ", " + rest[1:k]
                    rest = rest[k + 1:].strip()
                    break
        op.types = rest
        op.result_types = _result_types(rest)
        return op

    def region(self):
        region = Region()
        if self.i < len(self.lines):
            m = _BLOCK.match(self.lines[self.i])
            if m:
                self.i += 1
                for arg in _split_top(m.group(1) or ""):
                    name, ty = arg.split(":", 1)
                    region.args.append(name.strip())
                    region.arg_types.append(ty.strip())
        while True:
            line = self.lines[self.i]
            if line.startswith("})") or line.startswith("}, {"):
                self.i += 1
                return region
            region.ops.append(self.op())


def _check_index(m, at, what):
    """An index outside the memref is an error (numpy would wrap a negative
    one)."""
    for i, n in zip(at, m.array.shape):
        if not 0 <= i < n:
            raise InterpreterError(f"{what} at {list(at)} outside "
                                   f"{list(m.array.shape)}")


def load_kernel(path, name):
    """The gpu.func `name` of the generic-form module at `path`."""
    lines = open(path).read().splitlines()
    key = f'sym_name = "{name}"'
    end = next((k for k, l in enumerate(lines)
                if key in l and l.lstrip().startswith("})")), None)
    if end is None:
        raise InterpreterError(f"no gpu.func {name} in {path}")
    start = max(k for k in range(end) if lines[k].lstrip().startswith(
        '"gpu.func"'))
    func = _Parser(lines[start:end + 1]).op()
    return Kernel(func)


# --------------------------------------------------------------------------
# Values.

def _width(ty):
    if ty == "index" or ty == "i64":
        return 64
    if ty == "i1":
        return 1
    m = re.fullmatch(r"i(\d+)", ty)
    if m:
        return int(m.group(1))
    return None


def _wrap(v, bits):
    if bits == 1:
        return v & 1
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _unsigned(v, bits):
    return v & ((1 << bits) - 1)


def _f32(v):
    return np.float32(v)


def _bitcast_f32_to_i32(v):
    return struct.unpack("<i", struct.pack("<f", float(v)))[0]


def _bitcast_i32_to_f32(v):
    return np.float32(struct.unpack("<f", struct.pack("<i", _wrap(v, 32)))[0])




def _block_reduce(op, values):
    """gpu.all_reduce of `values` (thread order) by its `op` attribute (add,
    max, min; the IR's own region form is not modelled)."""
    kind = re.search(r"all_reduce_op (\w+)", op.props)
    if not kind or op.regions and op.regions[0].ops:
        raise InterpreterError("gpu.all_reduce with a region")
    total = values[0]
    for v in values[1:]:
        total = {"add": lambda a, b: a + b, "max": max, "min": min,
                 "maxnumf": max, "minnumf": min}[kind.group(1)](total, v)
    return total

def _parallel_indices(op, env):
    """The index tuples of scf.parallel `op`'s iterations, the last index
    fastest (its bounds read from `env`); refuses reductions, which the
    interpreter does not model."""
    n = [int(x) for x in re.search(
        r"operandSegmentSizes = array<i32: ([\d, ]+)>",
        op.props).group(1).split(",")]
    if n[3]:
        raise InterpreterError("scf.parallel with reductions")
    lbs, ubs, steps = ([env[v] for v in op.operands[sum(n[:k]):sum(n[:k + 1])]]
                       for k in range(3))
    return itertools.product(*(range(lb, ub, step)
                               for lb, ub, step in zip(lbs, ubs, steps)))

def _prop(op, key):
    m = re.search(rf"\b{key} = ([^,}}]+)", op.props)
    if not m:
        raise InterpreterError(f"{op.name}: no property {key}")
    return m.group(1).strip()


_CMPI = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult",
         7: "ule", 8: "ugt", 9: "uge"}


def _cmpi(pred, a, b, bits):
    kind = _CMPI[pred]
    if kind[0] == "u":
        a, b = _unsigned(a, bits), _unsigned(b, bits)
        kind = kind[1:]
    elif kind[0] == "s":
        kind = kind[1:]
    return int({"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
                "gt": a > b, "ge": a >= b}[kind])


def _vector_int_width(ty):
    """The element width of integer vector type `ty`, else None."""
    m = re.fullmatch(r"vector<\d+x(i\d+)>", ty or "")
    return int(m.group(1)[1:]) if m else None


def _vector_int_op(name, ty, width):
    """The elementwise function of integer op `name` on vectors of `ty`
    (unsigned numpy arrays of the element width, wrapping like the ISA), or
    None when `name` is not one."""
    dt = _vector_dtype(ty)

    def u(v):
        return np.asarray(v).astype(dt)

    def shift(left):
        def fn(a, b):
            a, b = u(a), u(b)
            with np.errstate(over="ignore"):
                moved = np.left_shift(a, b % width) if left else \
                    np.right_shift(a, b % width)
            return np.where(b >= width, dt(0), moved).astype(dt)
        return fn
    binary = {"arith.addi": np.add, "arith.subi": np.subtract,
              "arith.muli": np.multiply, "arith.andi": np.bitwise_and,
              "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor}
    if name in binary:
        fn = binary[name]

        def apply(a, b):
            with np.errstate(over="ignore"):
                return fn(u(a), u(b)).astype(dt)
        return apply
    if name == "arith.shli":
        return shift(True)
    if name == "arith.shrui":
        return shift(False)
    if name in ("arith.extui", "arith.trunci"):
        return u
    return None


def _vector_cmpi(pred, width):
    """arith.cmpi `pred` on unsigned vectors of `width`-bit elements."""
    kind = _CMPI[pred]

    def fn(a, b):
        a = np.asarray(a).astype(np.int64)
        b = np.asarray(b).astype(np.int64)
        if kind[0] == "s":
            a = np.where(a >> (width - 1) & 1, a - (1 << width), a)
            b = np.where(b >> (width - 1) & 1, b - (1 << width), b)
        op = kind[1:] if kind[0] in "su" else kind
        return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b,
                "gt": a > b, "ge": a >= b}[op]
    return fn


def _cmpf(pred, a, b):
    a, b = float(a), float(b)
    unordered = a != a or b != b
    ordered = {1: a == b, 2: a > b, 3: a >= b, 4: a < b, 5: a <= b,
               6: a != b, 7: True}
    if pred == 0:
        return 0
    if pred == 15:
        return 1
    if pred <= 7:
        return int(not unordered and ordered[pred])
    if pred == 14:
        return int(unordered)
    return int(unordered or ordered[pred - 7])


def _floats(x):
    """f32 operands: a scalar or a vector (numpy array)."""
    return np.asarray(x, np.float32)


def _scalar(x):
    """A 0-d result as an np.float32, a vector as its array."""
    return np.float32(x) if np.ndim(x) == 0 else x.astype(np.float32)


_MEMREF_DTYPES = {"i8": np.uint8, "i32": np.int32, "f32": np.float32,
                  "bf16": np.uint16, "i64": np.int64, "f8E4M3FN": np.uint8,
                  "f8E4M3FNUZ": np.uint8}


def _fp8_table(bias, fnuz):
    """The values of the 256 e4m3 codes (NaN where none)."""
    values = np.full(256, np.nan)
    for code in range(256):
        sign, exp, man = code >> 7, (code >> 3) & 15, code & 7
        if fnuz and code == 0x80:
            continue                      # FNUZ's only NaN
        if not fnuz and exp == 15 and man == 7:
            continue                      # OCP's NaNs
        mag = (man / 8 * 2.0 ** (1 - bias) if exp == 0 else
               (1 + man / 8) * 2.0 ** (exp - bias))
        values[code] = -mag if sign else mag
    return values


_FP8_FN = _fp8_table(7, False)
_FP8_SORTED = {}
_FP8_FNUZ = _fp8_table(8, True)


def _to_fp8(x, table):
    """f32 values (already within the format's range) rounded to the
    nearest code of `table`, ties to the even mantissa; bits as uint8."""
    key = id(table)
    if key not in _FP8_SORTED:
        codes = np.array([c for c in range(256) if not np.isnan(table[c]) and
                          c != 0x80], np.int64)
        order = np.argsort(table[codes], kind="stable")
        _FP8_SORTED[key] = (codes[order], table[codes][order])
    codes, values = _FP8_SORTED[key]
    flat = np.atleast_1d(x).astype(np.float64)
    hi = np.clip(np.searchsorted(values, flat), 1, len(values) - 1)
    lo = hi - 1
    d_lo, d_hi = flat - values[lo], values[hi] - flat
    pick = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi,
                    np.where(codes[lo] % 2 == 0, lo, hi)))
    if np.isnan(flat).any() or (np.abs(flat) > np.abs(values).max()).any():
        raise InterpreterError("fp8 truncation of a value out of range")
    out = codes[pick].astype(np.uint8)
    return out if np.ndim(x) else out[0]


def _vector_dtype(ty):
    """The numpy dtype holding the elements of vector type `ty`."""
    element = re.fullmatch(r"vector<\d+x(\w+)>", ty).group(1)
    return {"f32": np.float32, "bf16": np.uint16, "i32": np.uint32,
            "i1": np.bool_, "f16": np.float16,
            "i16": np.uint16, "i8": np.uint8, "f8E4M3FN": np.uint8,
            "f8E4M3FNUZ": np.uint8}[element]


def _operand_values(bits, type_text):
    """Matrix operand bits as float64 values, by their element type."""
    if type_text.startswith("f32") or type_text.startswith("vector<1xf32>"):
        return np.asarray(bits, np.float64).reshape(-1)
    if "f8E4M3FNUZ" in type_text:
        return _FP8_FNUZ[np.asarray(bits, np.uint8)]
    if "f8E4M3FN" in type_text:
        return _FP8_FN[np.asarray(bits, np.uint8)]
    return _bf16_values(bits)


def _bf16_values(bits):
    """bf16 bits (uint16 array) as float64 values."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(
        np.float32).astype(np.float64)


_MATRIX_OPS = ("nvvm.mma.sync", "amdgpu.mfma")
# Warpgroup collectives (128 consecutive threads meet at the instruction).
_WARPGROUP_OPS = ("nvvm.wgmma.mma_async",)
_WARPGROUP_THREADS = 128


class _MBarrier:
    """An mbarrier of workgroup memory: `pending` arrivals left in the
    current phase (set by its init), `phase` the number of phases
    completed. try_wait.parity P returns once the phase of parity P has
    completed: the current phase's parity is no longer P."""
    __slots__ = ("count", "pending", "phase")

    def __init__(self):
        self.count = self.pending = None
        self.phase = 0

    def init(self, count):
        self.count = self.pending = count
        self.phase = 0

    def arrive(self, n=1, complete=True):
        if self.count is None:
            raise InterpreterError("arrival on an uninitialised mbarrier")
        self.pending -= n
        if self.pending < 0:
            raise InterpreterError("more arrivals than an mbarrier's count")
        if self.pending == 0 and complete:
            self.phase += 1
            self.pending = self.count

    def passed(self, parity):
        if self.count is None:
            raise InterpreterError("wait on an uninitialised mbarrier")
        return self.phase % 2 != parity


# Addresses nvgpu.mbarrier.get gives the barriers (above any workgroup
# memory the interpreter hands out): 8 bytes each.
_MBARRIER_BASE = 1 << 30


def _ldmatrix(op, lanes):
    """nvgpu.ldmatrix (PTX ldmatrix.sync.aligned.m8n8.x{1,2,4}.b16): lanes
    8 i .. 8 i + 7 give the rows of 8 x 8 matrix i (each lane's row: the 8
    b16 values from its address); lane l receives of matrix i the values 2
    (l % 4) and 2 (l % 4) + 1 of row l / 4, or with `transpose` rows 2 (l %
    4) and 2 (l % 4) + 1 of column l / 4. `lanes`: each lane's (memref,
    indices); the results as uint16 arrays [tiles, 2]."""
    tiles = int(re.search(r"numTiles = (\d+)", op.props).group(1))
    transpose = "transpose = true" in op.props
    rows = []
    for m, at in lanes[:8 * tiles]:
        row = m.array[tuple(at[:-1])]
        if m.array.dtype != np.uint16 or at[-1] + 8 > row.shape[-1]:
            raise InterpreterError("nvgpu.ldmatrix row past its memref or "
                                   "not 16-bit")
        rows.append(np.array(row[at[-1]:at[-1] + 8], np.uint16))
    out = []
    for lane in range(len(lanes)):
        g, t = lane // 4, lane % 4
        value = np.zeros((tiles, 2), np.uint16)
        for i in range(tiles):
            matrix = rows[8 * i:8 * i + 8]
            value[i] = ([matrix[2 * t][g], matrix[2 * t + 1][g]] if transpose
                        else matrix[g][2 * t:2 * t + 2])
        out.append(value)
    return out


def _wgmma_operand(smem, desc, rows, k, eb, mn_major=False):
    """The byte indices [rows, k * eb] into workgroup memory `smem` (uint8,
    address 0 at its start) of a wgmma operand of `rows` M (or N) rows and
    `k` K values of `eb` bytes, from its matrix descriptor (PTX ISA "Matrix
    Descriptor Format": start address / 16 in bits 0-13, leading byte
    offset / 16 in 16-29, stride byte offset / 16 in 32-45, base offset in
    49-51, swizzle in 62-63: 0 none, 1 128 bytes, 2 64 bytes, 3 32 bytes),
    in the canonical layouts of CUTLASS's GMMA descriptors. K-major and
    swizzled (W the swizzle's bytes): row r's K values from (r / 8) SBO + (r
    % 8) W; unswizzled: 8 x 16-byte core matrices, K chunks LBO apart, 8-row
    groups SBO apart. MN-major (swizzled only): element (r, k) at (r / E)
    LBO + (r % E) eb + (k / 8) SBO + (k % 8) W (E = W / eb values of a row).
    The swizzle XORs the 16-byte chunk of address a with (a / 128) mod (W /
    16)."""
    desc = int(desc) & ((1 << 64) - 1)
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    if (desc >> 49) & 7:
        raise InterpreterError("wgmma descriptor with a base offset")
    mode = (desc >> 62) & 3
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    width = {0: 16, 1: 128, 2: 64, 3: 32}[mode]
    if mn_major:
        if not mode:
            raise InterpreterError("an unswizzled MN-major wgmma operand")
        per_row = width // eb
        addr = (start + (r // per_row) * lbo + (r % per_row) * eb +
                (kk // 8) * sbo + (kk % 8) * width)
    elif mode:
        addr = start + (r // 8) * sbo + (r % 8) * width + kk * eb
    else:
        b = kk * eb
        addr = start + (r // 8) * sbo + (r % 8) * 16 + (b // 16) * lbo + \
            b % 16
    if mode:
        addr = addr ^ (((addr >> 7) & (width // 16 - 1)) << 4)
    at = (addr[:, :, None] + np.arange(eb)[None, None, :]).reshape(rows, -1)
    if at.max() >= smem.size:
        raise InterpreterError("wgmma operand past the workgroup memory")
    return at


_WGMMA_BYTES = {"bf16": 2, "e4m3": 1, "tf32": 4}


def _wgmma_values(raw, kind):
    """Operand bytes [rows, K bytes] as float64 values [rows, K]."""
    if kind == "bf16":
        return _bf16_values(raw.view(np.uint16)).reshape(raw.shape[0], -1)
    if kind == "e4m3":
        return _FP8_FN[raw]
    if kind == "tf32":
        words = raw.view(np.uint32) & np.uint32(0xFFFFE000)
        return words.view(np.float32).astype(np.float64)
    raise InterpreterError(f"wgmma operand type {kind}")


def _wgmma(op, threads, smem):
    """nvvm.wgmma.mma_async (A K-major, B K-major or MN-major, both from
    workgroup memory, f32 accumulators) for a warpgroup's 128 threads, each giving (D struct,
    descriptor A, descriptor B): D = A B^T (+ D with scale-d one), the
    products summed in float64 and rounded to f32 once. D's register 4 j +
    v of thread 32 w + l holds row 16 w + l / 4 + 8 (v / 2), column 8 j + 2
    (l % 4) + v % 2 (PTX ISA "Register Fragments: D" of wgmma .m64nNk*).
    Returns the per-thread results and the byte indices the operands read."""
    shape = re.search(r"m = (\d+), n = (\d+), k = (\d+)", op.props)
    m, n, k = (int(v) for v in shape.groups())
    kind_a = re.search(r"typeA = #nvvm.wgmma_type<(\w+)>", op.props).group(1)
    kind_b = re.search(r"typeB = #nvvm.wgmma_type<(\w+)>", op.props).group(1)
    if ("layoutA = #nvvm.mma_layout<row>" not in op.props or
            "typeD = #nvvm.wgmma_type<f32>" not in op.props or m != 64):
        raise InterpreterError("wgmma other than a K-major A into f32")
    # B as stored: col is K-major (N rows of K), row MN-major.
    b_mn_major = "layoutB = #nvvm.mma_layout<row>" in op.props
    accumulate = "scaleD = #nvvm.wgmma_scale_out<one>" in op.props
    sign_a = -1.0 if "scaleA = #nvvm.wgmma_scale_in<neg>" in op.props else 1.0
    sign_b = -1.0 if "scaleB = #nvvm.wgmma_scale_in<neg>" in op.props else 1.0
    _, desc_a, desc_b = threads[0]
    if any(d_a != desc_a or d_b != desc_b for _, d_a, d_b in threads):
        raise InterpreterError("wgmma descriptors differ across the "
                               "warpgroup")
    at_a = _wgmma_operand(smem, desc_a, m, k, _WGMMA_BYTES[kind_a])
    at_b = _wgmma_operand(smem, desc_b, n, k, _WGMMA_BYTES[kind_b],
                          b_mn_major)
    a = sign_a * _wgmma_values(np.ascontiguousarray(smem[at_a]), kind_a)
    b = sign_b * _wgmma_values(np.ascontiguousarray(smem[at_b]), kind_b)
    d = a @ b.T
    rows = np.zeros((_WARPGROUP_THREADS, n // 2), np.int64)
    cols = np.zeros((_WARPGROUP_THREADS, n // 2), np.int64)
    for t in range(_WARPGROUP_THREADS):
        w, lane = divmod(t, 32)
        g, q = divmod(lane, 4)
        for r in range(n // 2):
            j, v = divmod(r, 4)
            rows[t, r] = 16 * w + g + 8 * (v // 2)
            cols[t, r] = 8 * j + 2 * q + v % 2
    out = []
    for t, (acc, _, _) in enumerate(threads):
        if len(acc) != n // 2:
            raise InterpreterError("wgmma accumulator of the wrong size")
        value = d[rows[t], cols[t]]
        if accumulate:
            value = value + np.asarray(acc, np.float64)
        out.append([np.float32(v) for v in value])
    return out, np.concatenate([at_a.reshape(-1), at_b.reshape(-1)])


class _Reads:
    """Workgroup memory bytes an asynchronous wgmma read, with their values
    at the instruction: they must not change before its wait."""
    __slots__ = ("smem", "at", "bytes", "checked")

    def __init__(self, smem, at):
        self.smem, self.at = smem, at
        self.bytes = smem[at].copy()
        self.checked = False

    def check(self):
        if not self.checked and not np.array_equal(self.smem[self.at],
                                                   self.bytes):
            raise InterpreterError(
                "workgroup memory an in-flight wgmma reads was written "
                "before its wgmma.wait_group")
        self.checked = True


def _retire_groups(groups, keep, retire):
    """Every group of `groups` (oldest first) but the newest `keep` retired:
    `retire` on each of its items, then the group dropped."""
    done = groups[:len(groups) - keep] if keep else list(groups)
    for group in done:
        for item in group:
            retire(item)
    del groups[:len(done)]


class _AsyncCopy:
    """An nvgpu.device_async_copy in flight: its source values, read at
    the copy, land in the destination at the wait that completes it (the
    latest moment: a read before the wait sees the old bytes), or with
    STRATA_INTERP_ASYNC=early at the copy itself (the earliest: a copy into
    bytes an in-flight wgmma still reads changes them before its wait)."""
    __slots__ = ("row", "start", "values", "landed")

    def __init__(self, row, start, values):
        self.row, self.start, self.values = row, start, values
        self.landed = False
        if os.environ.get("STRATA_INTERP_ASYNC") == "early":
            self.land()

    def land(self):
        if not self.landed:
            self.row[self.start:self.start + len(self.values)] = self.values
            self.landed = True


def _matrix_instruction(op, lanes):
    """Results per lane of matrix instruction `op`, given every lane's
    operand values (a subgroup collective)."""
    if op.name == "nvvm.mma.sync":
        if "#nvvm.mma_type<tf32>" in op.props:
            return _mma_sync_m16n8k8_tf32(op, lanes)
        return _mma_sync_m16n8k16(op, lanes)
    return _mfma(op, lanes)


def _set_c_m16n8(c, g, t, values):
    """Lane (g, t)'s 4 f32 of an m16n8 mma.sync C fragment into c [16, 8]:
    (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)."""
    c[g, 2 * t], c[g, 2 * t + 1], c[g + 8, 2 * t], c[g + 8, 2 * t + 1] = values


def _d_m16n8(d, count):
    """The `count` lanes' D fragments (the C layout) of the result d, as
    f32."""
    d = d.astype(np.float32)
    return [np.array([d[g, 2 * t], d[g, 2 * t + 1], d[g + 8, 2 * t],
                      d[g + 8, 2 * t + 1]], np.float32)
            for g, t in (divmod(lane, 4) for lane in range(count))]


def _tf32_value(reg):
    """A tf32 operand register (b32) as the value the tensor core reads:
    the f32 of its top 19 bits (the low 13 ignored)."""
    bits = _wrap(int(reg), 32) & 0xFFFFE000
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


def _to_tf32_rna(v):
    """cvt.rna.tf32.f32: f32 `v` rounded to 10 mantissa bits, to the
    nearest with ties away from zero, as the b32 register (low 13 bits 0)."""
    bits = struct.unpack("<I", struct.pack("<f", float(v)))[0]
    if (bits & 0x7F800000) != 0x7F800000:  # finite: round the magnitude
        bits = (bits + 0x1000) & 0xFFFFE000
    return struct.unpack("<i", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _mma_sync_m16n8k8_tf32(op, lanes):
    """mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 (PTX ISA "Matrix
    Fragments for mma.m16n8k8" .tf32, g = lane / 4, t = lane % 4): A in 4
    b32 registers (a0: (g, t), a1: (g + 8, t), a2: (g, t + 4), a3: (g + 8,
    t + 4)), B in 2 ((k t, column g), (k t + 4, column g)), C and D 4 f32
    as m16n8k16's."""
    if "m = 16, n = 8, k = 8" not in op.props:
        raise InterpreterError("nvvm.mma.sync tf32 other than m16n8k8")
    a = np.zeros((16, 8))
    b = np.zeros((8, 8))
    c = np.zeros((16, 8))
    for lane, values in enumerate(lanes):
        g, t = lane // 4, lane % 4
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3 = values
        a[g, t], a[g + 8, t] = _tf32_value(a0), _tf32_value(a1)
        a[g, t + 4], a[g + 8, t + 4] = _tf32_value(a2), _tf32_value(a3)
        b[t, g], b[t + 4, g] = _tf32_value(b0), _tf32_value(b1)
        _set_c_m16n8(c, g, t, (c0, c1, c2, c3))
    return _d_m16n8(a @ b + c, len(lanes))


def _mma_sync_m16n8k16(op, lanes):
    """mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 (PTX ISA
    "Matrix Fragments for mma.m16n8k16", g = lane / 4, t = lane % 4): A in
    4 b32 registers of 2 bf16 (a0: row g, k 2t..2t+1; a1: row g+8; a2: k
    2t+8..; a3: row g+8, k 2t+8..), B in 2 (k 2t..2t+1 and 2t+8.. of column
    g), C and D 4 f32 ((g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1))."""
    if ("m = 16, n = 8, k = 16" not in op.props or
            "#nvvm.mma_type<bf16>" not in op.props):
        raise InterpreterError("nvvm.mma.sync other than m16n8k16 bf16")
    a = np.zeros((16, 16))
    b = np.zeros((16, 8))
    c = np.zeros((16, 8))
    halves = lambda reg: _bf16_values(np.array([int(reg) & 0xFFFF,
                                                (int(reg) >> 16) & 0xFFFF]))
    for lane, values in enumerate(lanes):
        g, t = lane // 4, lane % 4
        a0, a1, a2, a3, b0, b1, c0, c1, c2, c3 = values
        a[g, 2 * t:2 * t + 2] = halves(a0)
        a[g + 8, 2 * t:2 * t + 2] = halves(a1)
        a[g, 2 * t + 8:2 * t + 10] = halves(a2)
        a[g + 8, 2 * t + 8:2 * t + 10] = halves(a3)
        b[2 * t:2 * t + 2, g] = halves(b0)
        b[2 * t + 8:2 * t + 10, g] = halves(b1)
        _set_c_m16n8(c, g, t, (c0, c1, c2, c3))
    return _d_m16n8(a @ b + c, len(lanes))


def _mfma(op, lanes):
    """amdgpu.mfma with bf16 or fp8 (e4m3, FNUZ or OCP) operands, m = n =
    16 or 32, one block (AMD's matrix instruction tables for
    v_mfma_f32_{16x16x16,16x16x32,32x32x8,32x32x16}_bf16 and the
    {16x16x32,32x32x16}_fp8_fp8 forms, 64 lanes): A's lane l holds row l % mn, k from (l / mn) *
    (k / G) on (G = 64 / mn lane groups); B's lane l column l % mn, the same
    k; D's lane l column l % mn and rows 8 j + 4 (l / mn) + i (32x32) or 4 (l
    / 16) + i (16x16) for its values 4 j + i."""
    m = int(re.search(r"\bm = (\d+)", op.props).group(1))
    k = int(re.search(r"\bk = (\d+)", op.props).group(1))
    if (int(re.search(r"\bn = (\d+)", op.props).group(1)) != m or
            "blocks = 1 " not in op.props or m not in (16, 32)):
        raise InterpreterError("amdgpu.mfma other than one 16x16 / 32x32 block")
    a_type, b_type = (t.strip() for t in
                      op.types.split("(")[1].split(")")[0].split(",")[:2])
    groups = 64 // m
    per = k // groups
    a = np.zeros((m, k))
    b = np.zeros((k, m))
    c = np.zeros((m, m))
    rows = [[(4 * groups * (v // 4) + 4 * (lane // m) + v % 4)
             for v in range(m * m // 64)] for lane in range(64)]
    for lane, (av, bv, cv) in enumerate(lanes):
        first = (lane // m) * per
        a[lane % m, first:first + per] = _operand_values(av, a_type)
        b[first:first + per, lane % m] = _operand_values(bv, b_type)
        c[rows[lane], lane % m] = np.asarray(cv, np.float64)
    d = (a @ b + c).astype(np.float32)
    return [np.array(d[rows[lane], lane % m], np.float32)
            for lane in range(64)]


def _met_collectives(waits, done, size, kinds, what, whole):
    """(first thread, threads) of every group of `size` consecutive threads
    of the block (the last one shorter unless `whole`) waiting at one
    collective of `kinds`, every thread of the group at the same op; a group
    that only partly waits there (others at another collective, or exited)
    is an error."""
    threads = len(waits)
    for first in range(0, threads, size):
        group = range(first, min(first + size, threads))
        pending = [t for t in group if not done[t]]
        if not pending or any(waits[t] is None or waits[t].kind not in kinds
                              for t in pending):
            continue
        if (whole and len(group) != size) or len(pending) != len(group) or \
                len({id(waits[t].op) for t in pending}) != 1:
            raise InterpreterError(
                f"{what} at thread {first}: threads at different "
                f"collectives, or exited")
        yield first, group


class MemRef:
    """A numpy array standing for a memref (row-major, identity layout)."""

    def __init__(self, array):
        self.array = array


# --------------------------------------------------------------------------
# Execution.

class _Sync:
    """What a waiting thread waits for."""
    __slots__ = ("kind", "op", "value", "offset", "width")

    def __init__(self, kind, op, value=None, offset=None, width=None):
        self.kind, self.op = kind, op
        self.value, self.offset, self.width = value, offset, width


class Kernel:
    def __init__(self, func):
        self.func = func
        m = re.search(r"known_block_size = array<i32: (\d+), (\d+), (\d+)>",
                      func.props)
        if not m:
            raise InterpreterError("the gpu.func has no known block size")
        self.block = tuple(int(x) for x in m.groups())
        body = func.regions[0]
        self.num_args = len(body.args) - len(
            [t for t in body.arg_types if "#gpu.address_space<workgroup>" in t])
        self.workgroup = body.arg_types[self.num_args:]
        # gpu.dynamic_shared_memory: the bytes the kernel launches with.
        m = re.search(r"strata.dynamic_shared_memory_bytes = (\d+)",
                      func.props)
        self.dynamic_shared = int(m.group(1)) if m else 0
        self._yields = {}
        self._compiled = {}
        self._plans = {}
        self._nested_plans = {}

    # Whether running `op` may suspend the thread.
    def _suspends(self, op):
        key = id(op)
        if key not in self._yields:
            self._yields[key] = op.name in ("gpu.barrier", "gpu.shuffle",
                                            "gpu.all_reduce", "nvgpu.ldmatrix",
                                            "nvgpu.mbarrier.try_wait.parity",
                                            *_MATRIX_OPS,
                                            *_WARPGROUP_OPS) or any(
                self._suspends(o) for r in op.regions for o in r.ops)
        return self._yields[key]

    def run(self, args, grid, subgroup_size, blocks=None):
        """Runs the kernel over `grid` blocks on `args` (numpy arrays for the
        memrefs, in argument order); the arrays hold the results after.
        `blocks` (a list of (x, y, z) block ids) runs only those blocks of
        the grid: for kernels whose blocks write disjoint results, a check
        of what they wrote."""
        if len(args) != self.num_args:
            raise InterpreterError(
                f"kernel takes {self.num_args} arguments, got {len(args)}")
        memrefs = [MemRef(a) for a in args]
        if blocks is None:
            blocks = [(bx, by, bz) for bz in range(grid[2])
                      for by in range(grid[1]) for bx in range(grid[0])]
        # Floating-point exceptions are the kernel's values (inf, NaN), not
        # warnings: ignored for the whole run (once, not per operation).
        with np.errstate(all="ignore"):
            for block in blocks:
                if not all(0 <= b < g for b, g in zip(block, grid)):
                    raise InterpreterError(
                        f"block {block} outside grid {grid}")
                self._run_block(tuple(block), grid, memrefs, subgroup_size)

    def _run_block(self, block_id, grid, memrefs, lanes):
        body = self.func.regions[0]
        shared = []
        for ty in self.workgroup:
            m = re.match(r"memref<([\dx]+)x(\w+), ", ty)
            shape = [int(d) for d in m.group(1).split("x")]
            dtype = _MEMREF_DTYPES[m.group(2)]
            shared.append(MemRef(np.zeros(shape, dtype)))
        threads = self.block[0] * self.block[1] * self.block[2]
        ctx = {"block_id": block_id, "grid": grid, "mbarriers": {},
               "dynamic_shared": MemRef(np.zeros(self.dynamic_shared,
                                                 np.uint8))}
        gens, waits = [], []
        for t in range(threads):
            env = dict(zip(body.args, memrefs + shared))
            tid = (t % self.block[0], t // self.block[0] % self.block[1],
                   t // (self.block[0] * self.block[1]))
            env["$tid"] = tid
            # Asynchronous copies and wgmma reads not yet waited for.
            env["$copies"] = {"pending": [], "groups": []}
            env["$wgmma"] = {"pending": [], "groups": []}
            gens.append(self._region_yield(body, env, ctx))
            waits.append(None)
        sends = [None] * threads
        done = [False] * threads
        order = (list(reversed(range(threads)))
                 if os.environ.get("STRATA_INTERP_ORDER") == "reverse"
                 else range(threads))
        while not all(done):
            for t in order:
                if done[t] or waits[t] is not None:
                    continue
                try:
                    waits[t] = gens[t].send(sends[t])
                except StopIteration:
                    done[t] = True
                sends[t] = None
            progressed = False
            for first, group in _met_collectives(
                    waits, done, lanes, ("shuffle", "matrix", "ldmatrix"),
                    f"subgroup of {lanes} lanes", whole=False):
                if waits[first].kind in ("matrix", "ldmatrix"):
                    compute = (_matrix_instruction if waits[first].kind ==
                               "matrix" else _ldmatrix)
                    results = compute(
                        waits[first].op, [waits[t].value for t in group])
                    for t, r in zip(group, results):
                        sends[t] = r
                        waits[t] = None
                    progressed = True
                    continue
                for t in group:
                    w = waits[t]
                    lane, width = t - first, w.width
                    base = lane - lane % width
                    mode = _prop(w.op, "mode")
                    src = {"#gpu<shuffle_mode xor>": lane ^ w.offset,
                           "#gpu<shuffle_mode up>": lane - w.offset,
                           "#gpu<shuffle_mode down>": lane + w.offset,
                           "#gpu<shuffle_mode idx>": base + w.offset}[mode]
                    valid = base <= src < base + width
                    value = waits[first + src].value if valid else w.value
                    sends[t] = (value, int(valid))
                for t in group:
                    waits[t] = None
                progressed = True
            for t in range(threads):
                w = waits[t]
                if w is not None and w.kind == "mbarrier" and \
                        w.value[0].passed(w.value[1]):
                    waits[t] = None
                    progressed = True
            for first, group in _met_collectives(
                    waits, done, _WARPGROUP_THREADS, ("warpgroup",),
                    "warpgroup", whole=True):
                smem = ctx["dynamic_shared"].array
                results, at = _wgmma(waits[first].op,
                                     [waits[t].value for t in group], smem)
                reads = _Reads(smem, at)
                for t, r in zip(group, results):
                    sends[t] = (r, reads)
                    waits[t] = None
                progressed = True
            if progressed:
                continue
            pending = [t for t in range(threads) if not done[t]]
            if not pending:
                break
            if all(waits[t] is not None and waits[t].kind == "all_reduce"
                   for t in pending):
                if len(pending) != threads or len(
                        {id(waits[t].op) for t in pending}) != 1:
                    raise InterpreterError("gpu.all_reduce reached by part "
                                           "of the block or at different ops")
                total = _block_reduce(waits[pending[0]].op,
                                      [waits[t].value for t in pending])
                for t in pending:
                    sends[t] = total
                    waits[t] = None
                continue
            if all(waits[t] is not None and waits[t].kind == "barrier"
                   for t in pending):
                if len(pending) != threads:
                    raise InterpreterError("barrier reached by part of the "
                                           "block (the rest exited)")
                for t in pending:
                    waits[t] = None
                continue
            raise InterpreterError("deadlock: threads wait at barriers, "
                                   "shuffles or mbarriers that cannot "
                                   "complete")

    def _run_nested(self, region, env, ctx):
        """Runs a region that cannot suspend; returns its yielded values (an
        scf.condition's: the condition, then the values)."""
        key = id(region)
        plan = self._nested_plans.get(key)
        if plan is None:
            plan = []
            for op in region.ops:
                if op.name in ("scf.yield", "scf.condition", "scf.reduce"):
                    plan.append((None, op.operands))
                    break
                plan.append((op, self._handler(op)))
            self._nested_plans[key] = plan
        for op, handler in plan:
            if op is None:
                return [env[v] for v in handler]
            handler(env, ctx)
        return []

    def _exec_suspending(self, op, env, ctx):
        name = op.name
        if name == "gpu.barrier":
            yield _Sync("barrier", op)
        elif name == "gpu.shuffle":
            value, offset, width = (env[v] for v in op.operands)
            result = yield _Sync("shuffle", op, value, offset, width)
            env[op.results[0]], env[op.results[1]] = result
        elif name in _MATRIX_OPS:
            values = [env[v] for v in op.operands]
            env[op.results[0]] = yield _Sync("matrix", op, values)
        elif name == "nvgpu.mbarrier.try_wait.parity":
            group, parity, _, at = (env[v] for v in op.operands)
            barrier = group[at]
            if not barrier.passed(parity & 1):
                yield _Sync("mbarrier", op, (barrier, parity & 1))
        elif name == "nvgpu.ldmatrix":
            memref, *at = (env[v] for v in op.operands)
            env[op.results[0]] = yield _Sync("ldmatrix", op, (memref, at))
        elif name in _WARPGROUP_OPS:
            values = [env[v] for v in op.operands]
            result, reads = yield _Sync("warpgroup", op, values)
            env[op.results[0]] = result
            env["$wgmma"]["pending"].append(reads)
        elif name == "gpu.all_reduce":
            env[op.results[0]] = yield _Sync("all_reduce", op,
                                             env[op.operands[0]])
        elif name == "scf.for":
            lb, ub, step = (env[v] for v in op.operands[:3])
            carried = [env[v] for v in op.operands[3:]]
            region = op.regions[0]
            i = lb
            while i < ub:
                env[region.args[0]] = i
                for a, v in zip(region.args[1:], carried):
                    env[a] = v
                carried = yield from self._region_yield(region, env, ctx)
                i += step
            for r, v in zip(op.results, carried):
                env[r] = v
        elif name == "scf.parallel":
            # Every thread runs the nest (block-uniform bounds), suspending
            # at the barriers and shuffles inside; no reductions.
            region = op.regions[0]
            for index in _parallel_indices(op, env):
                for a, i in zip(region.args, index):
                    env[a] = i
                yield from self._region_yield(region, env, ctx)
        elif name == "scf.if":
            region = op.regions[0] if env[op.operands[0]] else op.regions[1]
            values = yield from self._region_yield(region, env, ctx)
            for r, v in zip(op.results, values):
                env[r] = v
        else:
            raise InterpreterError(f"{name} cannot suspend")

    def _plan(self, region):
        """`region`'s ops as (op, handler): handler None for an op that may
        suspend; ends at the region's scf.yield / scf.reduce (its operands
        returned as the second element of a final (None, operands))."""
        key = id(region)
        plan = self._plans.get(key)
        if plan is None:
            plan = []
            for op in region.ops:
                if op.name in ("scf.yield", "scf.reduce"):
                    plan.append((None, op.operands))
                    break
                plan.append((op, None if self._suspends(op) else
                             self._handler(op)))
            self._plans[key] = plan
        return plan

    def _region_yield(self, region, env, ctx):
        """Runs `region` on a thread (a generator: it suspends at barriers
        and shuffles); returns the values its scf.yield gives."""
        for op, handler in self._plan(region):
            if op is None:
                return [env[v] for v in handler]
            if handler is None:
                yield from self._exec_suspending(op, env, ctx)
            else:
                handler(env, ctx)
        return []

    def _handler(self, op):
        handler = self._compiled.get(id(op))
        if handler is None:
            handler = self._compiled[id(op)] = self._compile(op)
        return handler

    def _exec(self, op, env, ctx):
        self._handler(op)(env, ctx)

    def _compile(self, op):
        """A closure running `op` on a thread's values (`env`)."""
        name = op.name
        operands = op.operands
        ty = op.result_types[0] if op.result_types else None
        bits = _width(ty) if ty else None
        res = op.results[0] if op.results else None

        def pure(fn):
            if len(operands) == 1:
                a0 = operands[0]

                def run(env, ctx):
                    env[res] = fn(env[a0])
            elif len(operands) == 2:
                a0, a1 = operands

                def run(env, ctx):
                    env[res] = fn(env[a0], env[a1])
            else:
                def run(env, ctx):
                    env[res] = fn(*[env[o] for o in operands])
            return run

        if name == "arith.constant":
            text = _prop(op, "value")
            if text in ("true", "false"):
                value = int(text == "true")
            elif text.startswith("dense<"):
                m = re.fullmatch(
                    r"dense<(.*)> : vector<(\d+)x(f32|bf16|f16|i8|i16|i32)>",
                    text)
                if not m:
                    raise InterpreterError("constant " + text)
                if m.group(3) in ("i8", "i16", "i32"):
                    width = int(m.group(3)[1:])
                    value = np.full(int(m.group(2)),
                                    int(m.group(1), 0) & ((1 << width) - 1),
                                    _vector_dtype(f"vector<1x{m.group(3)}>"))

                    def run(env, ctx):
                        env[res] = value
                    return run
                element = (_bitcast_i32_to_f32(int(m.group(1), 16))
                           if m.group(1).startswith("0x")
                           else np.float32(m.group(1)))
                value = np.full(int(m.group(2)), element, np.float32)
                if m.group(3) == "f16":
                    value = value.astype(np.float16)
                if m.group(3) == "bf16":
                    if value.any():
                        raise InterpreterError("constant " + text)
                    value = value.view(np.uint32).astype(np.uint16)
            else:
                literal = text.rsplit(":", 1)[0].strip()
                if ty == "f32":
                    value = (_bitcast_i32_to_f32(int(literal, 16))
                             if literal.startswith("0x") else _f32(literal))
                else:
                    value = _wrap(int(literal, 0), bits)

            def run(env, ctx):
                env[res] = value
            return run
        mask = (1 << bits) - 1 if bits else 0
        vector_width = _vector_int_width(ty)
        if vector_width:
            fn = _vector_int_op(name, ty, vector_width)
            if fn is not None:
                return pure(fn)
        if name == "arith.uitofp":
            if ty.startswith("vector<"):
                return pure(lambda a: np.asarray(a).astype(np.float32))
            src = _width(op.types.split("(")[1].split(")")[0].strip())
            return pure(lambda a: _f32(_unsigned(a, src)))
        if name == "arith.fptosi" and not ty.startswith("vector<"):
            # Toward zero, wrapped to the result's width (the values here
            # are exact integer counts).
            return pure(lambda a: _wrap(int(np.trunc(a)), bits))
        if name == "arith.addi":
            return pure(lambda a, b: _wrap(a + b, bits))
        if name == "arith.subi":
            return pure(lambda a, b: _wrap(a - b, bits))
        if name == "arith.muli":
            return pure(lambda a, b: _wrap(a * b, bits))
        if name in ("arith.divui", "arith.remui", "arith.ceildivui"):
            def divide(a, b):
                a, b = a & mask, b & mask
                if b == 0:
                    raise InterpreterError(f"{name}: division by zero")
                return _wrap(a // b if name == "arith.divui" else
                             a % b if name == "arith.remui" else -(-a // b),
                             bits)
            return pure(divide)
        if name in ("arith.divsi", "arith.remsi"):
            def divide_signed(a, b):
                a, b = _wrap(a, bits), _wrap(b, bits)
                if b == 0:
                    raise InterpreterError(f"{name}: division by zero")
                q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
                return _wrap(q if name == "arith.divsi" else a - b * q, bits)
            return pure(divide_signed)
        if name == "arith.andi":
            return pure(lambda a, b: _wrap((a & mask) & (b & mask), bits))
        if name == "arith.ori":
            return pure(lambda a, b: _wrap((a & mask) | (b & mask), bits))
        if name == "arith.xori":
            return pure(lambda a, b: _wrap((a & mask) ^ (b & mask), bits))
        if name == "arith.shli":
            return pure(lambda a, b: 0 if (b & mask) >= bits else
                        _wrap(a << (b & mask), bits))
        if name == "arith.shrui":
            return pure(lambda a, b: 0 if (b & mask) >= bits else
                        _wrap((a & mask) >> (b & mask), bits))
        if name == "arith.shrsi":
            return pure(lambda a, b: _wrap(a >> min(b & mask, bits - 1), bits))
        if name == "arith.minui":
            return pure(lambda a, b: a if (a & mask) <= (b & mask) else b)
        if name == "arith.maxui":
            return pure(lambda a, b: a if (a & mask) >= (b & mask) else b)
        if name == "arith.minsi":
            return pure(min)
        if name == "arith.maxsi":
            return pure(max)
        if name == "arith.cmpi":
            pred = int(_prop(op, "predicate").split(":")[0])
            operand = op.types.split("(")[1].split(",")[0].strip()
            if operand.startswith("vector<"):
                return pure(_vector_cmpi(pred, _vector_int_width(operand)))
            width = _width(operand)
            return pure(lambda a, b: _cmpi(pred, a, b, width))
        if name == "arith.cmpf":
            pred = int(_prop(op, "predicate").split(":")[0])
            return pure(lambda a, b: _cmpf(pred, a, b))
        if name == "arith.select":
            return pure(lambda c, a, b: np.where(c, a, b) if np.ndim(c)
                        else (a if c else b))
        if name in ("arith.index_cast", "arith.extsi", "arith.trunci"):
            return pure(lambda a: _wrap(a, bits))
        if name == "arith.extui":
            src = _width(op.types.split("(")[1].split(")")[0].strip())
            return pure(lambda a: _unsigned(a, src))
        if name == "nvvm.convert.f8x2.to.f16x2":
            # cvt.rn.f16x2.e4m3x2: every e4m3 value is an f16 value.
            if "srcType = f8E4M3FN" not in op.props or "relu = true" in \
                    op.props:
                raise InterpreterError("nvvm.convert.f8x2.to.f16x2 other "
                                       "than e4m3 without relu")
            return pure(lambda a: _FP8_FN[np.asarray(a, np.uint8)].astype(
                np.float16))
        if name == "nvvm.convert.float.to.tf32":
            if "rna" not in op.props:
                raise InterpreterError("cvt.tf32 other than rna")
            return pure(_to_tf32_rna)
        if name == "arith.bitcast":
            if ty.startswith("vector<"):
                # i8 and fp8 vectors both hold their bits as uint8.
                return pure(lambda a: np.asarray(a).view(_vector_dtype(ty)))
            return pure(_bitcast_f32_to_i32 if ty == "i32" else
                        _bitcast_i32_to_f32)
        floats = {"arith.addf": np.add, "arith.subf": np.subtract,
                  "arith.mulf": np.multiply, "arith.divf": np.divide,
                  "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
                  "llvm.intr.maxnum": np.fmax}
        if name in floats:
            fn = floats[name]
            # Two f32 scalars: numpy's scalar operator, the same correctly
            # rounded f32 operation as the ufunc on 0-d arrays, faster.
            scalar_fn = {"arith.addf": operator.add,
                         "arith.subf": operator.sub,
                         "arith.mulf": operator.mul,
                         "arith.divf": operator.truediv}.get(name, fn)

            def binary(a, b):
                if type(a) is np.float32 and type(b) is np.float32:
                    return scalar_fn(a, b)
                return _scalar(fn(_floats(a), _floats(b)))
            return pure(binary)
        if name == "arith.negf":
            return pure(lambda a: _scalar(np.negative(_floats(a))))
        if name in ("math.exp", "math.exp2"):
            fn_exp = np.exp if name == "math.exp" else np.exp2

            def exp(a):
                return _scalar(fn_exp(_floats(a)))
            return pure(exp)
        if name == "math.absf":
            return pure(lambda a: _scalar(np.abs(_floats(a))))
        if name == "math.fma":
            return pure(lambda a, b, c: _scalar(
                np.float32(1) * (_floats(a).astype(np.float64) *
                                 _floats(b) + _floats(c))))
        if name == "vector.reduction":
            kind = re.search(r"#vector.kind<(\w+)>", op.props).group(1)
            fn = {"maximumf": np.max, "minimumf": np.min, "add": np.sum}[kind]
            if kind == "add" and "f32" in ty:
                raise InterpreterError("vector.reduction add of floats "
                                       "(order unspecified)")
            return pure(lambda a: _scalar(fn(_floats(a))))
        if name == "math.sqrt":
            return pure(lambda a: _scalar(np.sqrt(_floats(a))))
        if name == "arith.extf":
            def extend(a):
                if type(a) is np.uint16:
                    return np.uint32(int(a) << 16).view(np.float32)
                a = np.asarray(a)
                if a.dtype == np.float16:     # f16 values (exact in f32)
                    return a.astype(np.float32)
                if a.dtype != np.uint16:
                    raise InterpreterError("arith.extf of a non-bf16 value")
                out = np.atleast_1d(a.astype(np.uint32) << 16).view(
                    np.float32)
                return out[0] if a.ndim == 0 else out
            return pure(extend)
        if name == "arith.truncf" and "xf8E4M3FN" in ty:
            table = _FP8_FNUZ if "xf8E4M3FNUZ>" in ty else _FP8_FN
            return pure(lambda a: _to_fp8(np.asarray(a, np.float32), table))
        if name == "arith.truncf":
            def truncate(a):
                if type(a) is np.float32:
                    if a != a:
                        return np.uint16(0x7FC0)
                    word = int(a.view(np.uint32))
                    word += 0x7FFF + ((word >> 16) & 1)  # ties to even
                    return np.uint16((word >> 16) & 0xFFFF)
                a = np.asarray(a, np.float32)
                bits = np.atleast_1d(a).view(np.uint32).astype(np.uint64)
                bits = bits + 0x7FFF + ((bits >> 16) & 1)  # ties to even
                out = ((bits >> 16) & 0xFFFF).astype(np.uint16)
                out = np.where(np.isnan(np.atleast_1d(a)), np.uint16(0x7FC0),
                               out).astype(np.uint16)
                return out[0] if a.ndim == 0 else out
            return pure(truncate)
        if name == "vector.broadcast":
            n = int(re.fullmatch(r"vector<(\d+)xf32>", ty).group(1))
            return pure(lambda a: np.full(n, np.float32(a), np.float32))
        if name == "vector.load":
            n = int(re.fullmatch(r"vector<(\d+)x\w+>", ty).group(1))

            def vload(m, *at):
                row = m.array[at[:-1]]
                if at[-1] + n > row.shape[-1]:
                    raise InterpreterError("vector.load past the row")
                return np.array(row[at[-1]:at[-1] + n])
            return pure(vload)
        if name == "vector.extract":
            at = tuple(int(v) for v in re.search(
                r"static_position = array<i64: ([\d, ]+)>",
                op.props).group(1).split(","))
            if len(at) == 1:
                at = at[0]
            return pure(lambda a: a[at])
        if name == "vector.insert_strided_slice":
            m = re.search(r"offsets = \[(\d+)\], strides = \[1\]", op.props)
            if not m:
                raise InterpreterError("vector.insert_strided_slice of more "
                                       "than one dimension or stride")
            at = int(m.group(1))

            def insert(src, dest):
                out = np.array(dest)
                out[at:at + len(src)] = src
                return out
            return pure(insert)
        if name == "vector.from_elements":
            dtype = _vector_dtype(ty)
            return pure(lambda *xs: np.array(xs, dtype))
        if name == "vector.bitcast":
            dtype = _vector_dtype(ty)
            return pure(lambda a: np.ascontiguousarray(a).view(dtype))
        if name == "vector.shuffle":
            mask = [int(x) for x in re.search(
                r"mask = array<i64: ([\d, ]+)>", op.props).group(1).split(",")]
            return pure(lambda a, b: np.concatenate(
                [np.atleast_1d(a), np.atleast_1d(b)])[mask])
        if name in ("memref.cast", "memref.memory_space_cast"):
            # The same buffer (memory spaces are not modelled).
            return pure(lambda m: m)
        if name == "memref.subview":
            dynamic = -9223372036854775808
            statics = {key: [int(v) for v in re.search(
                key + r" = array<i64: ([-\d, ]+)>", op.props).group(1).split(",")]
                for key in ("static_offsets", "static_sizes", "static_strides")}
            if any(v != 1 for v in statics["static_strides"]):
                raise InterpreterError("memref.subview with strides")
            m = re.fullmatch(r"memref<([?\dx]+)x\w+(, .*)?>", ty)
            result_rank = len(m.group(1).split("x"))

            def subview(source, *dims):
                dims = list(dims)
                offsets = [dims.pop(0) if v == dynamic else v
                           for v in statics["static_offsets"]]
                sizes = [dims.pop(0) if v == dynamic else v
                         for v in statics["static_sizes"]]
                view = source.array[tuple(slice(o, o + n) for o, n in
                                          zip(offsets, sizes))]
                if any(o + n > d for o, n, d in
                       zip(offsets, sizes, source.array.shape)):
                    raise InterpreterError("memref.subview past its source")
                if view.ndim != result_rank:
                    view = view.reshape([n for n in sizes if n != 1]
                                        if result_rank < view.ndim else sizes)
                return MemRef(view)
            return pure(subview)
        if name == "vector.extract_strided_slice":
            m = re.search(r"offsets = \[(\d+)\], sizes = \[(\d+)\], "
                          r"strides = \[1\]", op.props)
            if not m:
                raise InterpreterError("vector.extract_strided_slice of more "
                                       "than one dimension or stride")
            at, n = int(m.group(1)), int(m.group(2))
            return pure(lambda a: np.array(a[at:at + n]))
        if name == "memref.view":
            m = re.fullmatch(r"memref<([\d?x]+)x(\w+)(, .*)?>", ty)
            if not m:
                raise InterpreterError("memref.view to " + ty)
            dims = m.group(1).split("x")
            dtype = _MEMREF_DTYPES[m.group(2)]

            def view(buffer, offset, *sizes):
                raw = buffer.array
                if raw.dtype != np.uint8 or raw.ndim != 1:
                    raise InterpreterError("memref.view of a non-i8 buffer")
                dynamic = iter(sizes)
                shape = [next(dynamic) if d == "?" else int(d) for d in dims]
                nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
                if offset + nbytes > raw.size:
                    raise InterpreterError("memref.view past its buffer")
                return MemRef(raw[offset:offset + nbytes].view(dtype)
                              .reshape(shape))
            return pure(view)
        if name == "gpu.dynamic_shared_memory":
            def dynamic_shared(env, ctx):
                env[res] = ctx["dynamic_shared"]
            return dynamic_shared
        if name == "llvm.fence":
            # Blocks run one after another: every store is already visible.
            return lambda env, ctx: None
        if name == "llvm.extractvalue":
            at = int(re.search(r"position = array<i64: (\d+)>",
                               op.props).group(1))
            return pure(lambda a: a[at])
        if name == "vector.store":
            def vstore(env, ctx):
                vec, m, *at = [env[o] for o in operands]
                row = m.array[tuple(at[:-1])]
                if at[-1] + len(vec) > row.shape[-1]:
                    raise InterpreterError("vector.store past the row")
                row[at[-1]:at[-1] + len(vec)] = vec
            return vstore
        if name == "memref.load":
            def load(m, *at):
                _check_index(m, at, "memref.load")
                value = m.array[at]
                return (value if m.array.dtype in (np.float32, np.uint16)
                        else int(value))
            return pure(load)
        if name == "memref.store":
            def store(env, ctx):
                value, m, *at = [env[o] for o in operands]
                _check_index(m, at, "memref.store")
                m.array[tuple(at)] = value
            return store
        if name == "memref.dim":
            return pure(lambda m, d: m.array.shape[d])
        if name == "memref.atomic_rmw":
            kind = int(_prop(op, "kind").split(":")[0])
            if kind != 1:
                raise InterpreterError(f"memref.atomic_rmw kind {kind}")

            def atomic_add(value, m, *at):
                old = int(m.array[at])
                m.array[at] = _wrap(old + value, 32)
                return old
            return pure(atomic_add)
        if name in ("gpu.thread_id", "gpu.block_id", "gpu.grid_dim",
                    "gpu.block_dim"):
            d = "xyz".index(_prop(op, "dimension")[-2])

            def ids(env, ctx):
                env[res] = (env["$tid"][d] if name == "gpu.thread_id" else
                            ctx["block_id"][d] if name == "gpu.block_id" else
                            ctx["grid"][d] if name == "gpu.grid_dim" else
                            self.block[d])
            return ids
        if name == "scf.for":
            region = op.regions[0]

            def loop(env, ctx):
                lb, ub, step = (env[o] for o in operands[:3])
                carried = [env[o] for o in operands[3:]]
                i = lb
                while i < ub:
                    env[region.args[0]] = i
                    for a, c in zip(region.args[1:], carried):
                        env[a] = c
                    carried = self._run_nested(region, env, ctx)
                    i += step
                for r, c in zip(op.results, carried):
                    env[r] = c
            return loop
        if name == "scf.parallel":
            # A loop nest left inside one thread (no reductions): its
            # iterations one after another, the last index fastest.
            region = op.regions[0]

            def nest(env, ctx):
                for index in _parallel_indices(op, env):
                    for a, i in zip(region.args, index):
                        env[a] = i
                    self._run_nested(region, env, ctx)
            return nest
        if name == "scf.while":
            before, after = op.regions

            def while_loop(env, ctx):
                values = [env[o] for o in operands]
                while True:
                    for a, v in zip(before.args, values):
                        env[a] = v
                    cond, *values = self._run_nested(before, env, ctx)
                    if not cond:
                        break
                    for a, v in zip(after.args, values):
                        env[a] = v
                    values = self._run_nested(after, env, ctx)
                for r, v in zip(op.results, values):
                    env[r] = v
            return while_loop
        if name == "scf.if":
            def branch(env, ctx):
                region = op.regions[0] if env[operands[0]] else op.regions[1]
                for r, c in zip(op.results,
                                self._run_nested(region, env, ctx)):
                    env[r] = c
            return branch
        if name == "nvgpu.device_async_copy":
            sizes = [int(v) for v in re.search(
                r"operandSegmentSizes = array<i32: ([\d, ]+)>",
                op.props).group(1).split(",")]
            count = int(_prop(op, "dstElements").split(":")[0])

            def async_copy(env, ctx):
                values = [env[o] for o in operands]
                dst, dst_at = values[0], values[1:1 + sizes[1]]
                rest = values[1 + sizes[1]:]
                src, src_at = rest[0], rest[1:1 + sizes[3]]
                n = rest[1 + sizes[3]] if sizes[4] else count
                if not 0 <= n <= count:
                    raise InterpreterError("nvgpu.device_async_copy of "
                                           f"{n} of {count} elements")
                _check_index(dst, dst_at, "nvgpu.device_async_copy")
                row = dst.array[tuple(dst_at[:-1])]
                if dst_at[-1] + count > row.shape[-1]:
                    raise InterpreterError("nvgpu.device_async_copy past the "
                                           "destination row")
                data = np.zeros(count, row.dtype)
                if n:
                    _check_index(src, src_at, "nvgpu.device_async_copy")
                    source = src.array[tuple(src_at[:-1])]
                    if src_at[-1] + n > source.shape[-1]:
                        raise InterpreterError("nvgpu.device_async_copy past "
                                               "the source row")
                    if source.dtype != row.dtype:
                        raise InterpreterError("nvgpu.device_async_copy "
                                               "between element types")
                    data[:n] = source[src_at[-1]:src_at[-1] + n]
                copy = _AsyncCopy(row, dst_at[-1], data)
                env["$copies"]["pending"].append(copy)
                env[res] = copy
            return async_copy
        if name == "nvgpu.device_async_create_group":
            def create_group(env, ctx):
                state = env["$copies"]
                group = [env[o] for o in operands]
                for copy in group:
                    state["pending"].remove(copy)
                state["groups"].append(group)
                env[res] = group
            return create_group
        if name == "nvgpu.device_async_wait":
            keep = int(_prop(op, "numGroups").split(":")[0]) if \
                "numGroups" in op.props else 0

            def async_wait(env, ctx):
                _retire_groups(env["$copies"]["groups"], keep, _AsyncCopy.land)
            return async_wait
        if name == "nvgpu.mbarrier.create":
            m = re.search(r"num_barriers = (\d+)", ty or "")
            count = int(m.group(1)) if m else 1

            def create(env, ctx):
                # One group per block, whichever thread creates it first.
                env[res] = ctx["mbarriers"].setdefault(
                    id(op), [_MBarrier() for _ in range(count)])
            return create
        if name == "nvgpu.mbarrier.init":
            if len(operands) != 3:
                raise InterpreterError("nvgpu.mbarrier.init with a predicate")

            def init(env, ctx):
                group, count, at = (env[o] for o in operands)
                group[at].init(count)
            return init
        if name == "nvgpu.mbarrier.arrive":
            def arrive(env, ctx):
                group, at = (env[o] for o in operands)
                group[at].arrive()
                env[res] = group[at].phase
            return arrive
        if name == "nvgpu.mbarrier.arrive.nocomplete":
            def arrive_nocomplete(env, ctx):
                group, at, count = (env[o] for o in operands)
                group[at].arrive(count, complete=False)
                env[res] = group[at].phase
            return arrive_nocomplete
        if name == "nvgpu.mbarrier.get":
            def get(env, ctx):
                group, at = (env[o] for o in operands)
                table = ctx.setdefault("mbarrier_at", {})
                key = (id(group), at)
                if key not in table:
                    table[key] = _MBARRIER_BASE + 8 * len(table)
                    ctx.setdefault("mbarrier_of", {})[table[key]] = group[at]
                env[res] = table[key]
            return get
        if name == "llvm.inttoptr":
            return pure(lambda a: a)
        if name == "nvvm.cp.async.mbarrier.arrive":
            if "noinc = true" not in op.props:
                raise InterpreterError("cp.async.mbarrier.arrive without "
                                       ".noinc")

            def copies_arrive(env, ctx):
                # The arrival when the thread's earlier copies complete:
                # they land now, then the thread arrives.
                state = env["$copies"]
                for copy in state["pending"]:
                    copy.land()
                _retire_groups(state["groups"], 0, _AsyncCopy.land)
                barrier = ctx.get("mbarrier_of", {}).get(env[operands[0]])
                if barrier is None:
                    raise InterpreterError("cp.async.mbarrier.arrive on an "
                                           "address that is no mbarrier")
                barrier.arrive()
            return copies_arrive
        if name in ("nvvm.wgmma.fence.aligned", "nvvm.fence.proxy"):
            # The interpreter's stores are visible at once (no proxies).
            return lambda env, ctx: None
        if name == "nvvm.wgmma.commit.group.sync.aligned":
            def commit(env, ctx):
                state = env["$wgmma"]
                state["groups"].append(state["pending"])
                state["pending"] = []
            return commit
        if name == "nvvm.wgmma.wait.group.sync.aligned":
            keep = int(_prop(op, "group").split(":")[0])

            def wgmma_wait(env, ctx):
                _retire_groups(env["$wgmma"]["groups"], keep, _Reads.check)
            return wgmma_wait
        if name == "memref.extract_aligned_pointer_as_index":
            def address(env, ctx):
                m = env[operands[0]].array
                base = ctx["dynamic_shared"].array
                offset = (m.__array_interface__["data"][0] -
                          base.__array_interface__["data"][0])
                if not np.shares_memory(m, base) or offset < 0:
                    raise InterpreterError("the address of a memref other "
                                           "than the dynamic workgroup memory")
                env[res] = offset
            return address
        if name == "arith.index_castui":
            src = _width(op.types.split("(")[1].split(")")[0].strip())
            return pure(lambda a: _wrap(_unsigned(a, src), bits))
        if name == "llvm.mlir.poison":
            m = re.fullmatch(r"!llvm.struct<\((.*)\)>", ty or "")
            if not m:
                raise InterpreterError("llvm.mlir.poison of " + str(ty))
            count = len(_split_top(m.group(1)))

            def poison(env, ctx):
                env[res] = [np.float32(np.nan)] * count
            return poison
        if name == "llvm.insertvalue":
            at = int(re.search(r"position = array<i64: (\d+)>",
                               op.props).group(1))

            def insert_value(container, value):
                out = list(container)
                out[at] = value
                return out
            return pure(insert_value)
        if name == "llvm.inline_asm":
            # The kernels' one use: a 64-bit copy the compiler cannot see
            # through (it keeps a value from being rematerialised).
            if 'asm_string = "mov.b64 $0, $1;"' not in op.props:
                raise InterpreterError("llvm.inline_asm " + op.props)
            return pure(lambda a: a)
        if name == "vector.shape_cast":
            shape = [int(v) for v in re.fullmatch(
                r"vector<([\dx]+)x\w+>", ty).group(1).split("x")]
            return pure(lambda a: np.asarray(a).reshape(shape))
        if name == "arith.sitofp":
            return pure(lambda a: _f32(a) if np.ndim(a) == 0 else
                        np.asarray(a).astype(np.float32))
        if name == "arith.ceildivsi":
            def ceil_divide(a, b):
                a, b = _wrap(a, bits), _wrap(b, bits)
                if b == 0:
                    raise InterpreterError("arith.ceildivsi: division by zero")
                return _wrap(-(-a // b), bits)
            return pure(ceil_divide)
        if name == "gpu.return":
            return lambda env, ctx: None
        raise InterpreterError(f"operation {name} is not interpreted")

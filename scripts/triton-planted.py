#!/usr/bin/env python3
"""Triton-compiled correct candidates for the planted bench (class 8).

What
    Triton kernels written here, one per task, each with the task's exact
    semantics (tasks/L*/<task>/task.toml): the entry is named after the task and
    takes the task's parameters in the signature's order and types. Compiled by
    Triton for sm_90 (Triton writes `.target sm_90a`, kept as is), they are
    written as tests/planted/<task>/correct_triton[_<variant>].ptx with the
    bench's three header lines:

        // expect: correct
        // class: 8 Triton <version>'s PTX of <what>, with <launch>
        // @ptxforge block=(num_warps*32,1,1) grid=(<Triton's grid>) smem=<shared bytes>

    Covered: vector_add, relu, gelu (libdevice tanhf), softmax_rows, rmsnorm,
    layernorm, sum_reduction and dot_product (tl.atomic_add into the zeroed
    inout out[0], as the tasks specify), gemv, hgemm (tl.dot f16 -> f32, wgmma on
    sm_90a), sgemm (tl.dot with input_precision="ieee": an FMA loop, no TF32).

Why
    Triton's PTX (LLVM NVPTX: `.loc` lines, dynamic `global_smem`, inline asm,
    wgmma/mbarrier on sm_90a, scratch-pointer parameters) is nothing like the
    NVRTC reference the other planted files start from. A correct Triton kernel
    must be accepted end to end by `ptxforge check`, launch directive included.

How
    /tmp/tv/bin/python scripts/triton-planted.py [--ptxas PATH] [--only TASK,...]
                                                 [--out DIR]

    Needs Triton (CPU-only compiling is enough: Triton compiles for a named
    target, GPUTarget("cuda", 90, 32)). TRITON_PTXAS_PATH and
    TRITON_PTXAS_BLACKWELL_PATH are set to the ptxas given (default
    /usr/local/cuda/bin/ptxas, CUDA 13.0: PTX .version 9.0). --out writes
    <DIR>/<task>/... instead of tests/planted/<task>/ (to inspect first).

Post-processing (the only edits of Triton's PTX): every Triton 3.x kernel ends
its parameter list with two scratch pointers (global and profile scratch).
They are removed when the body never references them (checked: the script
stops otherwise), so that the entry matches the task's signature; then the
three header lines are prepended. The JIT's specialization is reproduced for
pointers only (tt.divisibility=16, as for torch allocations); integer
parameters get no divisibility or ==1 specialization, since the gate launches
one module on every shape (n = 33, n = 1, ...).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import triton
import triton.language as tl
from triton.language.extra import libdevice

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------
# Kernels: the name of each is the task's, its parameters the task's, in order.
# ---------------------------------------------------------------------------

@triton.jit
def vector_add(a, b, c, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c + offs, tl.load(a + offs, mask=mask) + tl.load(b + offs, mask=mask), mask=mask)


@triton.jit
def relu(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y + offs, tl.maximum(tl.load(x + offs, mask=mask), 0.0), mask=mask)


@triton.jit
def gelu(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    u = 0.7978845608028654 * tl.math.fma(0.044715 * v, v * v, v)
    tl.store(y + offs, 0.5 * v * (1.0 + libdevice.tanh(u)), mask=mask)  # __nv_tanhf, not tanh.approx


@triton.jit
def softmax_rows(x, y, rows, cols, BLOCK: tl.constexpr):
    """One program per row, any cols: a max pass, a sum-of-exp pass, a write pass."""
    row = tl.program_id(0)
    xr = x + row.to(tl.int64) * cols
    yr = y + row.to(tl.int64) * cols
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        m = tl.maximum(m, tl.load(xr + c, mask=c < cols, other=-float("inf")))
    mx = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        s += tl.exp(tl.load(xr + c, mask=c < cols, other=-float("inf")) - mx)  # exp(-inf) = 0
    inv = 1.0 / tl.sum(s, axis=0)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        tl.store(yr + c, tl.exp(tl.load(xr + c, mask=mask) - mx) * inv, mask=mask)


@triton.jit
def rmsnorm(x, gamma, y, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    xr = x + row.to(tl.int64) * cols
    yr = y + row.to(tl.int64) * cols
    q = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        v = tl.load(xr + c, mask=c < cols, other=0.0)
        q += v * v
    rstd = tl.math.rsqrt(tl.sum(q, axis=0) / cols + 1e-5)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        tl.store(yr + c, tl.load(xr + c, mask=mask) * rstd * tl.load(gamma + c, mask=mask), mask=mask)


@triton.jit
def layernorm(x, gamma, beta, y, rows, cols, BLOCK: tl.constexpr):
    """Two-pass statistics (mean, then the mean of squared deviations), biased variance."""
    row = tl.program_id(0)
    xr = x + row.to(tl.int64) * cols
    yr = y + row.to(tl.int64) * cols
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        s += tl.load(xr + c, mask=c < cols, other=0.0)
    mean = tl.sum(s, axis=0) / cols
    q = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        d = tl.where(mask, tl.load(xr + c, mask=mask, other=0.0) - mean, 0.0)
        q += d * d
    rstd = tl.math.rsqrt(tl.sum(q, axis=0) / cols + 1e-5)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        mask = c < cols
        v = tl.load(xr + c, mask=mask)
        g = tl.load(gamma + c, mask=mask)
        b = tl.load(beta + c, mask=mask)
        tl.store(yr + c, (v - mean) * rstd * g + b, mask=mask)


@triton.jit
def sum_reduction(x, out, n, BLOCK: tl.constexpr):
    """out[0] += sum(x): a grid-stride loop over BLOCK tiles, one atomic add per program."""
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out, tl.sum(acc, axis=0))


@triton.jit
def dot_product(x, y, out, n, BLOCK: tl.constexpr):
    """out[0] += sum(x * y): a grid-stride loop over BLOCK tiles, one atomic add per program."""
    pid = tl.program_id(0)
    step = tl.num_programs(0) * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(pid * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < n
        acc += tl.load(x + offs, mask=mask, other=0.0) * tl.load(y + offs, mask=mask, other=0.0)
    tl.atomic_add(out, tl.sum(acc, axis=0))


@triton.jit
def gemv(A, x, y, M, K, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """BLOCK_M rows per program, a [BLOCK_M, BLOCK_K] f32 accumulator summed along K at the end."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < M
    acc = tl.zeros([BLOCK_M, BLOCK_K], tl.float32)
    for start in range(0, K, BLOCK_K):
        k = start + tl.arange(0, BLOCK_K)
        k_ok = k < K
        a = tl.load(A + rows[:, None].to(tl.int64) * K + k[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        v = tl.load(x + k, mask=k_ok, other=0.0)
        acc += a * v[None, :]
    tl.store(y + rows, tl.sum(acc, axis=1), mask=row_ok)


@triton.jit
def _matmul(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + rk
        a = tl.load(A + rm[:, None] * K + k[None, :], mask=(rm[:, None] < M) & (k[None, :] < K), other=0.0)
        b = tl.load(B + k[:, None] * N + rn[None, :], mask=(k[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION, out_dtype=tl.float32)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def hgemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C (f32) = A (f16) * B (f16), f32 accumulation; grid (N tiles, M tiles) like the task's."""
    _matmul(A, B, C, M, N, K, BM, BN, BK, "tf32")  # the precision argument is ignored for f16 inputs


@triton.jit
def sgemm(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """C = A * B in f32: input_precision="ieee" makes tl.dot an FMA loop (no TF32 rounding)."""
    _matmul(A, B, C, M, N, K, BM, BN, BK, "ieee")


# ---------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------

@dataclass
class Case:
    task: str
    fn: object
    params: list  # (name, Triton type) in the task signature's order
    constexprs: dict
    grid: str  # the directive's grid, in the task's symbols: Triton's grid for the launch
    what: str  # "Triton 3.9's PTX of <what>, with <launch>"
    num_warps: int = 4
    num_stages: int = 3
    variant: str = ""
    extra_signature: dict = field(default_factory=dict)


def elementwise(task, params, what, block=1024, warps=4):
    return Case(task, globals()[task], params, {"BLOCK": block}, f"(ceildiv(n,{block}),1,1)",
                f"{what}, with {block} elements per {warps * 32}-thread program: {block // (warps * 32)} predicated "
                f"scalar loads per thread (n has no divisibility hint, so no vector loads)",
                num_warps=warps)


def build_cases():
    f32p, f16p = "*fp32", "*fp16"
    return [
        elementwise("vector_add", [("a", f32p), ("b", f32p), ("c", f32p), ("n", "i32")], "c = a + b"),
        elementwise("relu", [("x", f32p), ("y", f32p), ("n", "i32")], "tl.maximum(x, 0)"),
        elementwise("gelu", [("x", f32p), ("y", f32p), ("n", "i32")],
                    "the tanh form of GELU through libdevice.tanh (__nv_tanhf inlined)"),
        Case("softmax_rows", softmax_rows, [("x", f32p), ("y", f32p), ("rows", "i32"), ("cols", "i32")],
             {"BLOCK": 1024}, "(rows,1,1)",
             "a three-pass row softmax (max, sum of tl.exp, write) over 1024-column chunks, "
             "one 128-thread program per row", num_warps=4),
        Case("rmsnorm", rmsnorm, [("x", f32p), ("gamma", f32p), ("y", f32p), ("rows", "i32"), ("cols", "i32")],
             {"BLOCK": 512}, "(rows,1,1)",
             "a two-pass rmsnorm (sum of squares, tl.math.rsqrt, write) over 512-column chunks, "
             "one 128-thread program per row", num_warps=4),
        Case("layernorm", layernorm,
             [("x", f32p), ("gamma", f32p), ("beta", f32p), ("y", f32p), ("rows", "i32"), ("cols", "i32")],
             {"BLOCK": 512}, "(rows,1,1)",
             "a three-pass layernorm (mean, mean of squared deviations, write) over 512-column chunks, "
             "one 256-thread program per row", num_warps=8),
        Case("sum_reduction", sum_reduction, [("x", f32p), ("out", f32p), ("n", "i32")],
             {"BLOCK": 2048}, "(min(ceildiv(n,2048),1056),1,1)",
             "a grid-stride loop over 2048-element tiles, tl.sum and one tl.atomic_add per program "
             "(atom.global.gpu.acq_rel.add.f32 by one thread), 256-thread programs on a capped grid",
             num_warps=8),
        Case("dot_product", dot_product, [("x", f32p), ("y", f32p), ("out", f32p), ("n", "i32")],
             {"BLOCK": 2048}, "(min(ceildiv(n,2048),1056),1,1)",
             "a grid-stride loop of x*y over 2048-element tiles, tl.sum and one tl.atomic_add per program, "
             "256-thread programs on a capped grid", num_warps=8),
        Case("gemv", gemv, [("A", f32p), ("x", f32p), ("y", f32p), ("M", "i32"), ("K", "i32")],
             {"BLOCK_M": 8, "BLOCK_K": 128}, "(ceildiv(M,8),1,1)",
             "an [8, 128] f32 tile accumulator summed along K (tl.sum axis 1), 8 rows per 128-thread program",
             num_warps=4),
        Case("hgemm", hgemm, [("A", f16p), ("B", f16p), ("C", f32p), ("M", "i32"), ("N", "i32"), ("K", "i32")],
             {"BM": 64, "BN": 64, "BK": 32}, "(ceildiv(N,64),ceildiv(M,64),1)",
             "tl.dot on f16 tiles with f32 accumulation: masked element-wise loads staged through 16 KiB of "
             "dynamic shared memory, fence.proxy.async, two sm_90a wgmma.mma_async m64n64k16 per 64x64x32 "
             "tile, commit_group/wait_group 0; 128-thread programs", num_warps=4),
        Case("sgemm", sgemm, [("A", f32p), ("B", f32p), ("C", f32p), ("M", "i32"), ("N", "i32"), ("K", "i32")],
             {"BM": 32, "BN": 32, "BK": 16}, "(ceildiv(N,32),ceildiv(M,32),1)",
             'tl.dot with input_precision="ieee" (an f32 FMA loop, no TF32) on 32x32x16 tiles, staged by '
             "4-byte cp.async (zero-filled when masked) in a 3-stage pipeline (two 4 KiB shared buffers), "
             "128-thread programs", num_warps=4),
    ]


# ---------------------------------------------------------------------------
# Compile, post-process, write
# ---------------------------------------------------------------------------

def compile_case(case):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = [name for name, _ in case.params]
    arg_names = case.fn.arg_names
    if [a for a in arg_names if a not in case.constexprs] != names:
        raise ValueError(f"{case.task}: kernel arguments {arg_names} do not match the task's {names}")
    signature, attrs = {}, {}
    types = dict(case.params)
    for index, arg in enumerate(arg_names):
        if arg in case.constexprs:
            signature[arg] = "constexpr"
            continue
        signature[arg] = types[arg]
        if types[arg].startswith("*"):
            attrs[(index,)] = [["tt.divisibility", 16]]  # the gate's buffers are 256-byte aligned
    src = ASTSource(fn=case.fn, signature=signature, constexprs=dict(case.constexprs), attrs=attrs)
    options = {"num_warps": case.num_warps, "num_stages": case.num_stages, "enable_fp_fusion": True}
    return triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)


def strip_scratch_params(ptx, entry):
    """Removes the two trailing scratch-pointer parameters if the body never names them."""
    head = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    if not head:
        raise RuntimeError(f"no .entry {entry}")
    params = [p.strip() for p in head.group(1).split(",")]
    scratch = params[-2:]
    names = [p.split()[-1] for p in scratch]
    if not all(n.startswith(f"{entry}_param_") for n in names):
        raise RuntimeError(f"{entry}: unexpected trailing parameters {scratch}")
    body = ptx[head.end():]
    for n in names:
        if re.search(re.escape(n) + r"\b", body):
            raise RuntimeError(f"{entry}: the body references the scratch parameter {n}; not removing it")
    # Drop ",\n\t.param .u64 .ptr.global .align 1 NAME" (the whole text from the comma before it).
    kept = head.group(1)
    for n in names:
        kept = re.sub(r",\s*\.param[^,]*?\b" + re.escape(n) + r"\b", "", kept, count=1)
    if any(n in kept for n in names):
        raise RuntimeError(f"{entry}: could not remove {names}")
    return ptx[:head.start(1)] + kept + ptx[head.end(1):], scratch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ptxas", default=os.environ.get("TRITON_PTXAS_PATH", "/usr/local/cuda/bin/ptxas"))
    ap.add_argument("--only", help="comma-separated task names")
    ap.add_argument("--out", help="root to write <task>/ folders under (default tests/planted)")
    args = ap.parse_args()
    os.environ["TRITON_PTXAS_PATH"] = args.ptxas
    os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = args.ptxas
    root = Path(args.out) if args.out else REPO / "tests" / "planted"
    only = set(args.only.split(",")) if args.only else None
    for case in build_cases():
        if only and case.task not in only:
            continue
        kernel = compile_case(case)
        md = kernel.metadata
        if md.name != case.task:
            raise RuntimeError(f"entry {md.name}, expected {case.task}")
        if md.global_scratch_size or md.profile_scratch_size:
            raise RuntimeError(f"{case.task}: the kernel uses scratch memory "
                               f"({md.global_scratch_size}, {md.profile_scratch_size} bytes)")
        ptx, removed = strip_scratch_params(kernel.asm["ptx"], md.name)
        block = case.num_warps * 32
        header = (
            "// expect: correct\n"
            f"// class: 8 Triton {triton.__version__}'s PTX of {case.what} (scripts/triton-planted.py; "
            f"the two unused scratch-pointer parameters removed)\n"
            f"// @ptxforge block=({block},1,1) grid={case.grid} smem={md.shared}\n"
        )
        name = "correct_triton" + (f"_{case.variant}" if case.variant else "") + ".ptx"
        path = root / case.task / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(header + ptx)
        target = re.search(r"^\.target\s+(\S+)", ptx, re.M).group(1)
        version = re.search(r"^\.version\s+(\S+)", ptx, re.M).group(1)
        print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}: "
              f"{target} .version {version}, block {block}, grid {case.grid}, shared {md.shared} B, "
              f"removed {len(removed)} scratch params")
    return 0


if __name__ == "__main__":
    sys.exit(main())

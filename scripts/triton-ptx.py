#!/usr/bin/env python3
"""Triton-written PTX for ptxforge: generate a corpus, then run it against numpy.

What
    A set of Triton kernels written here (24 cases, 48 files) that cover the
    idioms real Triton code is made of: masked vector ops in fp32/fp16/bf16,
    libdevice and approximate math, row softmax, layernorm and rmsnorm, 2D-tile
    reductions (sum/max/min/argmax), scans (tl.cumsum, tl.associative_scan),
    float and integer atomics (16-bit floats included), tiled tl.dot in
    fp16/bf16/tf32/int8 (fp8 e4m3 and device-side tensor descriptors on
    sm_90), a small flash-attention forward, a 2D tile through tl.trans,
    tl.where/clamp/NaN-propagating max and min, integer division, remainder
    and shifts by run-time values, masked 2D loads with `other=`, conversions
    (fp8, round-toward-zero, float <-> integer), Philox random numbers and
    dropout, and tl.sort/flip/gather/histogram.

Why
    Triton is a large source of real-world PTX, and its PTX looks nothing like
    nvcc's: LLVM NVPTX output, `.loc` debug lines, dynamic shared memory
    (`global_smem`), inline-asm blocks of packed conversions, ldmatrix/mma.sync
    on sm_80, wgmma/mbarrier/cp.async.bulk on sm_90a. This corpus holds
    ptxforge's lint, compiler driver and emulator to that PTX.

How
    python scripts/triton-ptx.py gen OUTDIR [--ptxas PATH] [--only SUBSTR]
        Needs Triton (no GPU: Triton compiles for a named target). Writes
        OUTDIR/<case>_sm<cc>.ptx for cc 80 and 90 (Triton writes sm_90a for 90)
        and OUTDIR/manifest.json: for each file the entry name, grid, block,
        dynamic shared memory, the parameters in order (buffers with type,
        shape, role and input generator; scalars with value), tolerances and
        the name of the numpy reference below.

    python scripts/triton-ptx.py run OUTDIR [--ptxforge build/ptxforge]
                                            [--executor emu|gpu|auto] [--only SUBSTR]
        Needs numpy and ptxforge only (not Triton), so it runs on a GPU machine
        as well. For each file: makes the inputs (fixed seeds), launches it with
        `ptxforge run`, reads the dumped outputs and compares them with the
        numpy reference (exact for integers; tolerances suited to the output
        type and the computation otherwise). Each file ends `ok`, `mismatch`,
        `findings` (outputs right, but the executor reported findings such as
        initcheck), `error` (the launch failed: unsupported instruction, a
        fatal memcheck/racecheck finding), `timeout` or `crash`. Exits 1 unless
        every file is `ok`.

Launches are as Triton's own launcher makes them: the JIT's specialization is
reproduced (integer arguments equal to 1 become constants, pointers and
integers divisible by 16 carry tt.divisibility=16, as for torch tensors), the
block is num_warps*32 threads, the dynamic shared memory is the compiled
kernel's `shared`, and the two trailing pointers every Triton 3.x kernel takes
(global and profile scratch) get buffers of the size the kernel asks for.
Shapes have ragged edges (n = 1000 for a block of 256, and so on) so that the
masks matter.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:  # Triton is needed by `gen` only; `run` works from the manifest.
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
except ImportError:
    triton = tl = libdevice = None

# The kernels' annotations are strings (`from __future__ import annotations`),
# which Triton accepts, so without Triton the kernels are plain functions that
# are never called.
jit = triton.jit if triton is not None else (lambda fn: fn)

REPO = Path(__file__).resolve().parent.parent
TARGETS = (80, 90)


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@jit
def math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Sixteen functions of x, one row of out each."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    o = out_ptr + offs
    tl.store(o + 0 * n, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), mask=mask)
    tl.store(o + 1 * n, libdevice.tanh(x), mask=mask)
    tl.store(o + 2 * n, tl.exp(-x * x), mask=mask)
    tl.store(o + 3 * n, tl.sigmoid(x), mask=mask)
    tl.store(o + 4 * n, tl.log(1.0 + x * x), mask=mask)
    tl.store(o + 5 * n, tl.sqrt(tl.abs(x)), mask=mask)
    tl.store(o + 6 * n, tl.sin(x) * tl.cos(x), mask=mask)
    tl.store(o + 7 * n, tl.math.rsqrt(1.0 + x * x), mask=mask)
    tl.store(o + 8 * n, tl.exp2(x), mask=mask)
    tl.store(o + 9 * n, x / (1.0 + tl.abs(x)), mask=mask)
    tl.store(o + 10 * n, tl.math.div_rn(x, 3.0), mask=mask)
    tl.store(o + 11 * n, tl.floor(x * 2.5) + tl.ceil(x * 0.5), mask=mask)
    tl.store(o + 12 * n, tl.math.fma(x, x, -1.0), mask=mask)
    tl.store(o + 13 * n, libdevice.pow(tl.abs(x), 1.5), mask=mask)
    tl.store(o + 14 * n, tl.log2(1.0 + tl.abs(x)), mask=mask)
    tl.store(o + 15 * n, libdevice.atan2(x, 1.5), mask=mask)


@jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


@jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps, BLOCK: tl.constexpr):
    """The Triton tutorial's three-loop form: fp16 in and out, fp32 statistics."""
    row = tl.program_id(0)
    x_row = x_ptr + row * stride
    y_row = y_ptr + row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    tl.store(mean_ptr + row, mean)
    tl.store(rstd_ptr + row, rstd)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        mask = cols < N
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - mean) * rstd * w + b).to(tl.float16), mask=mask)


@jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, stride, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.math.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * stride + cols, (x * r * w).to(tl.bfloat16), mask=mask)


@jit
def row_reduce_kernel(x_ptr, sum_ptr, max_ptr, argmax_ptr, min_ptr, M, N, stride,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Reductions along axis 1 of a [BLOCK_M, BLOCK_N] tile."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride + cols[None, :], mask=mask, other=0.0)
    high = tl.where(mask, x, -float("inf"))
    row_ok = rows < M
    tl.store(sum_ptr + rows, tl.sum(x, axis=1), mask=row_ok)
    tl.store(max_ptr + rows, tl.max(high, axis=1), mask=row_ok)
    tl.store(argmax_ptr + rows, tl.argmax(high, axis=1), mask=row_ok)
    tl.store(min_ptr + rows, tl.min(tl.where(mask, x, float("inf")), axis=1), mask=row_ok)


@jit
def _max_combine(a, b):
    return tl.maximum(a, b)


@jit
def scan_kernel(x_ptr, i_ptr, csum_ptr, icsum_ptr, cmax_ptr, n, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    at = row * stride + cols
    x = tl.load(x_ptr + at, mask=mask, other=0.0)
    tl.store(csum_ptr + at, tl.cumsum(x, axis=0), mask=mask)
    xi = tl.load(i_ptr + at, mask=mask, other=0)
    tl.store(icsum_ptr + at, tl.cumsum(xi, axis=0), mask=mask)
    xm = tl.load(x_ptr + at, mask=mask, other=-float("inf"))
    tl.store(cmax_ptr + at, tl.associative_scan(xm, 0, _max_combine), mask=mask)


@jit
def histogram_kernel(x_ptr, w_ptr, hist_ptr, wsum_ptr, hmax_ptr, n, nbins, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    bins = x % nbins
    tl.atomic_add(hist_ptr + bins, tl.full([BLOCK], 1, tl.int32), mask=mask)
    tl.atomic_add(wsum_ptr + bins, w, mask=mask)
    tl.atomic_max(hmax_ptr + bins, x, mask=mask)


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  INT_ACC: tl.constexpr):
    """The Triton tutorial's grouped-order matmul; the accumulator is fp32 (int32 for int8)."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    if INT_ACC:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


@jit
def matmul_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Device-side tensor descriptors (TMA on sm_90); out-of-bounds boxes read as zeros."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = a_desc.load([off_m, k * BLOCK_K])
        b = b_desc.load([k * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(tl.float16))


@jit
def attention_kernel(q_ptr, k_ptr, v_ptr, out_ptr, sm_scale, seq_len, stride_h, stride_s,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Flash-attention forward (online softmax in base 2), no causal mask, fp16 in and out."""
    start_m = tl.program_id(0)
    head = tl.program_id(1) * stride_h
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head + offs_m[:, None] * stride_s + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634
    for start_n in range(0, seq_len, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + head + cols[None, :] * stride_s + offs_d[:, None], mask=cols[None, :] < seq_len, other=0.0)
        qk = tl.where(cols[None, :] < seq_len, tl.dot(q, k) * qk_scale, -float("inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + head + cols[:, None] * stride_s + offs_d[None, :], mask=cols[:, None] < seq_len, other=0.0)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_ij
    out = acc / l_i[:, None]
    tl.store(out_ptr + head + offs_m[:, None] * stride_s + offs_d[None, :], out.to(tl.float16),
             mask=offs_m[:, None] < seq_len)


@jit
def transpose_kernel(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A 2D tile in, its transpose out: tl.trans moves the tile through shared memory."""
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    tile = tl.load(x_ptr + rm[:, None] * stride_xm + rn[None, :], mask=(rm[:, None] < M) & (rn[None, :] < N))
    tl.store(y_ptr + rn[:, None] * stride_ym + rm[None, :], tl.trans(tile), mask=(rn[:, None] < N) & (rm[None, :] < M))


@jit
def select_kernel(x_ptr, y_ptr, out_ptr, n, slope, lo, hi, BLOCK: tl.constexpr):
    """tl.where, tl.clamp, NaN-propagating and plain max/min; y holds NaNs."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)
    o = out_ptr + offs
    tl.store(o + 0 * n, tl.where(x > 0, x, x * slope), mask=mask)
    tl.store(o + 1 * n, tl.clamp(x, lo, hi), mask=mask)
    tl.store(o + 2 * n, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=mask)
    tl.store(o + 3 * n, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL), mask=mask)
    tl.store(o + 4 * n, tl.where(y != y, -7.0, tl.where(x < y, x, y)), mask=mask)
    tl.store(o + 5 * n, tl.where((x > lo) & (x < hi), 1.0, 0.0) + tl.where(x >= y, 2.0, 0.0), mask=mask)


@jit
def int_ops_kernel(a_ptr, b_ptr, out_ptr, wide_ptr, n, d, s, BLOCK: tl.constexpr):
    """Integer division, remainder (C semantics) and shifts by run-time values."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0)
    b = tl.load(b_ptr + offs, mask=mask, other=1)
    ua = a.to(tl.uint32, bitcast=True)
    ub = b.to(tl.uint32, bitcast=True)
    o = out_ptr + offs
    tl.store(o + 0 * n, a // b, mask=mask)
    tl.store(o + 1 * n, a % b, mask=mask)
    tl.store(o + 2 * n, a // d, mask=mask)
    tl.store(o + 3 * n, a % d, mask=mask)
    tl.store(o + 4 * n, a << s, mask=mask)
    tl.store(o + 5 * n, a >> s, mask=mask)
    tl.store(o + 6 * n, (ua >> s).to(tl.int32, bitcast=True), mask=mask)
    tl.store(o + 7 * n, (ua // d.to(tl.uint32)).to(tl.int32, bitcast=True), mask=mask)
    tl.store(o + 8 * n, (ua % (ub | 1)).to(tl.int32, bitcast=True), mask=mask)
    tl.store(o + 9 * n, a * b * 7919, mask=mask)
    tl.store(o + 10 * n, tl.math.umulhi(ua, ub).to(tl.int32, bitcast=True), mask=mask)
    tl.store(o + 11 * n, (a ^ b) & (a | ~b), mask=mask)
    tl.store(o + 12 * n, a << (b & 31), mask=mask)
    tl.store(o + 13 * n, a >> (b & 31), mask=mask)
    tl.store(o + 14 * n, tl.abs(a) + tl.maximum(a, b) - tl.minimum(a, b), mask=mask)
    a64 = a.to(tl.int64)
    tl.store(wide_ptr + offs, a64 * b.to(tl.int64) * 12345 // d, mask=mask)
    tl.store(wide_ptr + n + offs, (a64 << 20) % b.to(tl.int64), mask=mask)


@jit
def stencil_kernel(x_ptr, out_ptr, H, W, stride, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    """Masked 2D loads whose `other=` values are part of the result."""
    r = tl.program_id(0) * BLOCK_H + tl.arange(0, BLOCK_H)[:, None]
    c = tl.program_id(1) * BLOCK_W + tl.arange(0, BLOCK_W)[None, :]
    inside = (r < H) & (c < W)
    at = x_ptr + r * stride + c
    center = tl.load(at, mask=inside, other=0.0)
    up = tl.load(at - stride, mask=inside & (r >= 1), other=-1.0)
    down = tl.load(at + stride, mask=(r + 1 < H) & (c < W), other=-1.0)
    left = tl.load(at - 1, mask=inside & (c >= 1), other=0.5)
    right = tl.load(at + 1, mask=(r < H) & (c + 1 < W), other=0.5)
    tl.store(out_ptr + r * stride + c, 4.0 * center - up - down - left - right, mask=inside)


@jit
def cast_kernel(x_ptr, i_ptr, e4m3_ptr, e5m2_ptr, h_ptr, bh_ptr, i_out_ptr, f_out_ptr, n, BLOCK: tl.constexpr,
                E4M3: tl.constexpr):
    """Conversions: f32 -> fp8 (e4m3 where the target has it, e5m2), f16/bf16 toward zero, float <-> integer."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    xi = tl.load(i_ptr + offs, mask=mask, other=0)
    if E4M3:
        tl.store(e4m3_ptr + offs, x.to(tl.float8e4nv), mask=mask)
    tl.store(e5m2_ptr + offs, x.to(tl.float8e5), mask=mask)
    tl.store(h_ptr + offs, x.to(tl.float16, fp_downcast_rounding="rtz"), mask=mask)
    tl.store(bh_ptr + offs, x.to(tl.bfloat16, fp_downcast_rounding="rtz"), mask=mask)
    tl.store(i_out_ptr + offs, x.to(tl.int32), mask=mask)
    tl.store(i_out_ptr + n + offs, (x * 0.3).to(tl.int8).to(tl.int32), mask=mask)
    tl.store(f_out_ptr + offs, xi.to(tl.float32), mask=mask)
    tl.store(f_out_ptr + n + offs, x.to(tl.float16).to(tl.float32), mask=mask)
    tl.store(f_out_ptr + 2 * n + offs, xi.to(tl.float16).to(tl.float32), mask=mask)
    tl.store(f_out_ptr + 3 * n + offs, x.to(tl.bfloat16).to(tl.float32), mask=mask)


@jit
def dropout_kernel(x_ptr, bits_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    """Philox random numbers (tl.randint, tl.rand) and the dropout made of them."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(bits_ptr + offs, tl.randint(seed, offs), mask=mask)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=mask)


@jit
def block_ops_kernel(x_ptr, k_ptr, sorted_ptr, desc_ptr, flip_ptr, gather_ptr, hist_ptr, n, NBINS: tl.constexpr,
                     BLOCK: tl.constexpr):
    """tl.sort (both ways), tl.flip, tl.gather and tl.histogram over one row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=float("inf"))
    tl.store(sorted_ptr + row * n + cols, tl.sort(x), mask=mask)
    tl.store(desc_ptr + row * n + cols, tl.sort(tl.where(mask, x, -float("inf")), descending=True), mask=mask)
    tl.store(flip_ptr + row * BLOCK + cols, tl.flip(x, 0))
    tl.store(gather_ptr + row * BLOCK + cols, tl.gather(x, (cols * 7) % BLOCK, 0))
    k = tl.load(k_ptr + row * n + cols, mask=mask, other=0)
    tl.store(hist_ptr + row * NBINS + tl.arange(0, NBINS), tl.histogram(k, NBINS, mask=mask))


@jit
def atomics_kernel(x_ptr, h16_ptr, hb16_ptr, ints_ptr, n, nbins, BLOCK: tl.constexpr):
    """fp16/bf16 atomic adds (exact sums) and integer min/and/or/xor with memory orders and scopes."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0)
    bins = x % nbins
    tl.atomic_add(h16_ptr + bins, tl.full([BLOCK], 0.5, tl.float16), mask=mask)
    tl.atomic_add(hb16_ptr + bins, tl.full([BLOCK], 0.25, tl.bfloat16), mask=mask)
    tl.atomic_min(ints_ptr + bins, x, mask=mask, sem="relaxed")
    tl.atomic_and(ints_ptr + nbins + bins, x | 0x10000, mask=mask, sem="acquire", scope="gpu")
    tl.atomic_or(ints_ptr + 2 * nbins + bins, x, mask=mask, sem="release", scope="sys")
    tl.atomic_xor(ints_ptr + 3 * nbins + bins, x, mask=mask, sem="acq_rel", scope="cta")


# ---------------------------------------------------------------------------
# Element types: our name -> Triton pointer/scalar type, ptxforge type, numpy storage
# ---------------------------------------------------------------------------

DTYPES = {
    "f32": ("fp32", "f32", np.float32),
    "f16": ("fp16", "f16", np.float16),
    "bf16": ("bf16", "bf16", np.uint16),  # stored as its bits
    "e4m3": ("fp8e4nv", "u8", np.uint8),  # stored as its bits
    "e5m2": ("fp8e5", "u8", np.uint8),  # stored as its bits
    "s8": ("i8", "s8", np.int8),
    "s32": ("i32", "s32", np.int32),
    "u32": ("u32", "u32", np.uint32),
    "s64": ("i64", "s64", np.int64),
    "u8": ("u8", "u8", np.uint8),
}
FLOATS = {"f32", "f16", "bf16", "e4m3", "e5m2"}
# Default tolerances (atol, rtol) of an output of each float type: a few
# roundings of the output type.
DEFAULT_TOL = {"f32": (1e-5, 1e-5), "f16": (2e-3, 2e-3), "bf16": (1.6e-2, 1.6e-2), "e4m3": (0.0, 0.0), "e5m2": (0.0, 0.0)}


def bf16_encode(values):
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_decode(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def _fp8_table(exp_bits):
    """The value of each of the 256 codes of e4m3 (e4m3fn: no infinities) or e5m2 (IEEE-like)."""
    man_bits = 7 - exp_bits
    bias = (1 << (exp_bits - 1)) - 1
    codes = np.arange(256)
    sign = np.where(codes & 0x80, -1.0, 1.0)
    exp = (codes >> man_bits) & ((1 << exp_bits) - 1)
    man = codes & ((1 << man_bits) - 1)
    scale = float(1 << man_bits)
    value = sign * np.where(exp == 0, man / scale * 2.0 ** (1 - bias), (1 + man / scale) * 2.0 ** (exp - bias))
    top = (1 << exp_bits) - 1
    if exp_bits == 4:
        value[(exp == top) & (man == 7)] = np.nan
    else:
        value[(exp == top) & (man == 0)] = sign[(exp == top) & (man == 0)] * np.inf
        value[(exp == top) & (man != 0)] = np.nan
    return value


FP8 = {"e4m3": _fp8_table(4), "e5m2": _fp8_table(5)}


def fp8_encode(values, dtype):
    """Round to nearest, ties to even (the code with an even mantissa); saturates to the largest finite."""
    table = FP8[dtype]
    finite = np.flatnonzero(np.isfinite(table))
    order = finite[np.argsort(table[finite], kind="stable")]
    sorted_values = table[order]
    v = np.asarray(values, dtype=np.float64).ravel()
    i = np.clip(np.searchsorted(sorted_values, v), 1, len(sorted_values) - 1)
    below, above = order[i - 1], order[i]
    d_below, d_above = np.abs(table[below] - v), np.abs(table[above] - v)
    pick = np.where(d_below < d_above, below, np.where(d_above < d_below, above, np.where(below % 2 == 0, below, above)))
    return pick.astype(np.uint8).reshape(np.shape(values))


def encode(values, dtype):
    """Values (any float/int array) -> the storage array of `dtype`."""
    if dtype == "bf16":
        return bf16_encode(values)
    if dtype in FP8:
        return fp8_encode(values, dtype)
    return np.asarray(values).astype(DTYPES[dtype][2])


def decode(storage, dtype):
    """Storage array -> float64 (floats) or int64 (integers) values."""
    if dtype == "bf16":
        return bf16_decode(storage).astype(np.float64)
    if dtype in FP8:
        return FP8[dtype][storage]
    if dtype in FLOATS:
        return storage.astype(np.float64)
    if dtype == "u32":
        return storage.astype(np.uint64).astype(np.int64)
    return storage.astype(np.int64)


def make_input(init, dtype, shape, seed):
    """The storage array of an input buffer from its generator `init`."""
    rng = np.random.default_rng(seed)
    kind, args = init[0], init[1:]
    if kind == "zeros":
        values = np.zeros(shape)
    elif kind == "uniform":
        values = rng.uniform(args[0], args[1], shape)
    elif kind == "normal":
        values = rng.normal(0.0, args[0], shape)
    elif kind == "randint":
        values = rng.integers(args[0], args[1], shape)
    elif kind == "nonzero":
        values = rng.integers(args[0], args[1], shape)
        values[values == 0] = 1
    elif kind == "uniform_nan":  # uniform with a fraction args[2] of NaNs
        values = rng.uniform(args[0], args[1], shape)
        values[rng.random(shape) < args[2]] = np.nan
    else:
        raise ValueError(f"unknown input generator {init!r}")
    return encode(values, dtype)


# ---------------------------------------------------------------------------
# Cases: a kernel, its launch and its data
# ---------------------------------------------------------------------------

@dataclass
class Buf:
    name: str
    dtype: str
    shape: tuple
    init: list | None = None  # a generator (make_input) for inputs; None for outputs (zeros)
    out: bool = False  # compared after the launch (an input too when init is given)
    tol: tuple | None = None  # (atol, rtol) of an output; default by type


@dataclass
class Scalar:
    name: str
    dtype: str
    value: int | float


@dataclass
class Case:
    name: str
    fn: object
    params: list  # Buf and Scalar, in the kernel's argument order (constexprs left out)
    constexprs: dict
    grid: tuple
    reference: str  # a function in REFERENCES
    num_warps: int = 4
    num_stages: int = 3
    targets: tuple = TARGETS


def cdiv(a, b):
    return -(-a // b)


def _add_case(dtype):
    n = 1000
    return Case(f"add_{dtype}", add_kernel,
                [Buf("x_ptr", dtype, (n,), ["uniform", -4, 4]), Buf("y_ptr", dtype, (n,), ["uniform", -4, 4]),
                 Buf("out_ptr", dtype, (n,), out=True), Scalar("n", "s32", n)],
                {"BLOCK": 256 if dtype == "f32" else 512}, (cdiv(n, 256 if dtype == "f32" else 512),), "ref_add")


def _matmul_case(name, dtype, out_dtype, M, N, K, blocks, tol, init, num_warps=4, num_stages=3, targets=TARGETS):
    bm, bn, bk = blocks
    return Case(name, matmul_kernel,
                [Buf("a_ptr", dtype, (M, K), init), Buf("b_ptr", dtype, (K, N), init),
                 Buf("c_ptr", out_dtype, (M, N), out=True, tol=tol),
                 Scalar("M", "s32", M), Scalar("N", "s32", N), Scalar("K", "s32", K),
                 Scalar("stride_am", "s32", K), Scalar("stride_ak", "s32", 1),
                 Scalar("stride_bk", "s32", N), Scalar("stride_bn", "s32", 1),
                 Scalar("stride_cm", "s32", N), Scalar("stride_cn", "s32", 1)],
                {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "INT_ACC": dtype == "s8"},
                (cdiv(M, bm) * cdiv(N, bn),), "ref_matmul", num_warps, num_stages, targets)


def build_cases():
    cases = [_add_case("f32"), _add_case("f16"), _add_case("bf16")]
    n = 1000
    cases.append(Case("math_f32", math_kernel,
                      [Buf("x_ptr", "f32", (n,), ["uniform", -4, 4]),
                       Buf("out_ptr", "f32", (16, n), out=True, tol=(2e-6, 2e-5)), Scalar("n", "s32", n)],
                      {"BLOCK": 256}, (cdiv(n, 256),), "ref_math"))
    rows, cols = 37, 1000
    cases.append(Case("softmax_f32", softmax_kernel,
                      [Buf("out_ptr", "f32", (rows, cols), out=True, tol=(1e-7, 1e-5)),
                       Buf("in_ptr", "f32", (rows, cols), ["normal", 2.0]),
                       Scalar("in_stride", "s32", cols), Scalar("out_stride", "s32", cols), Scalar("n_cols", "s32", cols)],
                      {"BLOCK": 1024}, (rows,), "ref_softmax"))
    rows, N, stride = 24, 700, 704
    cases.append(Case("layernorm_f16", layernorm_kernel,
                      [Buf("x_ptr", "f16", (rows, stride), ["normal", 1.5]),
                       Buf("y_ptr", "f16", (rows, stride), out=True, tol=(4e-3, 4e-3)),
                       Buf("w_ptr", "f32", (N,), ["uniform", 0.5, 1.5]), Buf("b_ptr", "f32", (N,), ["uniform", -1, 1]),
                       Buf("mean_ptr", "f32", (rows,), out=True, tol=(1e-5, 1e-4)),
                       Buf("rstd_ptr", "f32", (rows,), out=True, tol=(1e-5, 1e-4)),
                       Scalar("stride", "s32", stride), Scalar("N", "s32", N), Scalar("eps", "f32", 1e-5)],
                      {"BLOCK": 256}, (rows,), "ref_layernorm"))
    rows, N = 16, 1000
    cases.append(Case("rmsnorm_bf16", rmsnorm_kernel,
                      [Buf("x_ptr", "bf16", (rows, N), ["normal", 1.0]), Buf("w_ptr", "bf16", (N,), ["uniform", 0.5, 1.5]),
                       Buf("y_ptr", "bf16", (rows, N), out=True), Scalar("stride", "s32", N), Scalar("N", "s32", N),
                       Scalar("eps", "f32", 1e-6)],
                      {"BLOCK": 1024}, (rows,), "ref_rmsnorm", num_warps=8))
    M, N = 50, 300
    cases.append(Case("row_reduce_f32", row_reduce_kernel,
                      [Buf("x_ptr", "f32", (M, N), ["uniform", -10, 10]),
                       Buf("sum_ptr", "f32", (M,), out=True, tol=(1e-4, 1e-5)), Buf("max_ptr", "f32", (M,), out=True),
                       Buf("argmax_ptr", "s32", (M,), out=True), Buf("min_ptr", "f32", (M,), out=True),
                       Scalar("M", "s32", M), Scalar("N", "s32", N), Scalar("stride", "s32", N)],
                      {"BLOCK_M": 4, "BLOCK_N": 512}, (cdiv(M, 4),), "ref_row_reduce"))
    rows, n = 8, 1000
    cases.append(Case("scan", scan_kernel,
                      [Buf("x_ptr", "f32", (rows, n), ["uniform", -1, 1]), Buf("i_ptr", "s32", (rows, n), ["randint", -1000, 1000]),
                       Buf("csum_ptr", "f32", (rows, n), out=True, tol=(1e-4, 1e-5)),
                       Buf("icsum_ptr", "s32", (rows, n), out=True), Buf("cmax_ptr", "f32", (rows, n), out=True),
                       Scalar("n", "s32", n), Scalar("stride", "s32", n)],
                      {"BLOCK": 1024}, (rows,), "ref_scan"))
    n, nbins = 1000, 37
    cases.append(Case("histogram_atomics", histogram_kernel,
                      [Buf("x_ptr", "s32", (n,), ["randint", 0, 100000]), Buf("w_ptr", "f32", (n,), ["uniform", 0, 1]),
                       Buf("hist_ptr", "s32", (nbins,), out=True), Buf("wsum_ptr", "f32", (nbins,), out=True, tol=(1e-5, 1e-5)),
                       Buf("hmax_ptr", "s32", (nbins,), out=True), Scalar("n", "s32", n), Scalar("nbins", "s32", nbins)],
                      {"BLOCK": 256}, (cdiv(n, 256),), "ref_histogram"))
    cases += [
        _matmul_case("matmul_f16", "f16", "f16", 200, 144, 192, (64, 64, 32), (1e-2, 4e-3), ["uniform", -1, 1]),
        _matmul_case("matmul_bf16", "bf16", "f32", 100, 100, 120, (64, 64, 32), (1e-4, 1e-5), ["uniform", -1, 1]),
        _matmul_case("matmul_tf32", "f32", "f32", 96, 80, 72, (64, 64, 32), (3e-2, 1e-2), ["uniform", -1, 1]),
        _matmul_case("matmul_i8", "s8", "s32", 100, 96, 160, (64, 64, 64), None, ["randint", -128, 128]),
        _matmul_case("matmul_fp8e4m3", "e4m3", "f32", 150, 128, 128, (64, 64, 64), (2e-2, 1e-3), ["uniform", -2, 2],
                     targets=(90,)),
    ]
    M, N, K = 200, 144, 192
    cases.append(Case("matmul_tma_f16", matmul_tma_kernel,
                      [Buf("a_ptr", "f16", (M, K), ["uniform", -1, 1]), Buf("b_ptr", "f16", (K, N), ["uniform", -1, 1]),
                       Buf("c_ptr", "f16", (M, N), out=True, tol=(1e-2, 4e-3)),
                       Scalar("M", "s32", M), Scalar("N", "s32", N), Scalar("K", "s32", K)],
                      {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, (cdiv(M, 64), cdiv(N, 64)), "ref_matmul_tma",
                      targets=(90,)))
    heads, seq, dim = 3, 100, 64
    cases.append(Case("attention_f16", attention_kernel,
                      [Buf("q_ptr", "f16", (heads, seq, dim), ["normal", 1.0]), Buf("k_ptr", "f16", (heads, seq, dim), ["normal", 1.0]),
                       Buf("v_ptr", "f16", (heads, seq, dim), ["normal", 1.0]),
                       Buf("out_ptr", "f16", (heads, seq, dim), out=True, tol=(1e-2, 1e-2)),
                       Scalar("sm_scale", "f32", 0.125), Scalar("seq_len", "s32", seq),
                       Scalar("stride_h", "s32", seq * dim), Scalar("stride_s", "s32", dim)],
                      {"HEAD_DIM": dim, "BLOCK_M": 64, "BLOCK_N": 32}, (cdiv(seq, 64), heads), "ref_attention"))
    M, N = 100, 75
    cases.append(Case("transpose_f16", transpose_kernel,
                      [Buf("x_ptr", "f16", (M, N), ["uniform", -100, 100]), Buf("y_ptr", "f16", (N, M), out=True, tol=(0, 0)),
                       Scalar("M", "s32", M), Scalar("N", "s32", N), Scalar("stride_xm", "s32", N), Scalar("stride_ym", "s32", M)],
                      {"BLOCK_M": 32, "BLOCK_N": 32}, (cdiv(M, 32), cdiv(N, 32)), "ref_transpose"))
    n = 1000
    cases.append(Case("select_f32", select_kernel,
                      [Buf("x_ptr", "f32", (n,), ["uniform", -3, 3]), Buf("y_ptr", "f32", (n,), ["uniform_nan", -3, 3, 0.05]),
                       Buf("out_ptr", "f32", (6, n), out=True, tol=(0, 1e-7)), Scalar("n", "s32", n),
                       Scalar("slope", "f32", 0.1), Scalar("lo", "f32", -1.5), Scalar("hi", "f32", 2.0)],
                      {"BLOCK": 256}, (cdiv(n, 256),), "ref_select"))
    cases.append(Case("int_ops", int_ops_kernel,
                      [Buf("a_ptr", "s32", (n,), ["randint", -100000, 100000]), Buf("b_ptr", "s32", (n,), ["nonzero", -1000, 1000]),
                       Buf("out_ptr", "s32", (15, n), out=True), Buf("wide_ptr", "s64", (2, n), out=True),
                       Scalar("n", "s32", n), Scalar("d", "s32", 7), Scalar("s", "s32", 5)],
                      {"BLOCK": 256}, (cdiv(n, 256),), "ref_int_ops"))
    H, W = 45, 70
    cases.append(Case("stencil_f32", stencil_kernel,
                      [Buf("x_ptr", "f32", (H, W), ["uniform", -1, 1]), Buf("out_ptr", "f32", (H, W), out=True),
                       Scalar("H", "s32", H), Scalar("W", "s32", W), Scalar("stride", "s32", W)],
                      {"BLOCK_H": 16, "BLOCK_W": 32}, (cdiv(H, 16), cdiv(W, 32)), "ref_stencil"))
    n = 1000
    for e4m3, targets in ((True, (90,)), (False, (80,))):  # Triton has no e4m3 before sm_89
        cases.append(Case("cast" if e4m3 else "cast_no_e4m3", cast_kernel,
                          [Buf("x_ptr", "f32", (n,), ["uniform", -300, 300]),
                           Buf("i_ptr", "s32", (n,), ["randint", -70000, 70000]),
                           Buf("e4m3_ptr", "e4m3" if e4m3 else "u8", (n,), out=e4m3),
                           Buf("e5m2_ptr", "e5m2", (n,), out=True),
                           Buf("h_ptr", "f16", (n,), out=True, tol=(0, 0)), Buf("bh_ptr", "bf16", (n,), out=True, tol=(0, 0)),
                           Buf("i_out_ptr", "s32", (2, n), out=True), Buf("f_out_ptr", "f32", (4, n), out=True, tol=(0, 0)),
                           Scalar("n", "s32", n)],
                          {"BLOCK": 256, "E4M3": e4m3}, (cdiv(n, 256),), "ref_cast", targets=targets))
    cases.append(Case("dropout", dropout_kernel,
                      [Buf("x_ptr", "f32", (n,), ["uniform", -1, 1]), Buf("bits_ptr", "u32", (n,), out=True),
                       Buf("out_ptr", "f32", (n,), out=True, tol=(0, 1e-6)),
                       Scalar("n", "s32", n), Scalar("p", "f32", 0.3), Scalar("seed", "s32", 1234)],
                      {"BLOCK": 256}, (cdiv(n, 256),), "ref_dropout"))
    rows, n, block, nbins = 6, 250, 256, 16
    cases.append(Case("block_ops", block_ops_kernel,
                      [Buf("x_ptr", "f32", (rows, n), ["uniform", -10, 10]), Buf("k_ptr", "s32", (rows, n), ["randint", 0, nbins]),
                       Buf("sorted_ptr", "f32", (rows, n), out=True, tol=(0, 0)),
                       Buf("desc_ptr", "f32", (rows, n), out=True, tol=(0, 0)),
                       Buf("flip_ptr", "f32", (rows, block), out=True, tol=(0, 0)),
                       Buf("gather_ptr", "f32", (rows, block), out=True, tol=(0, 0)),
                       Buf("hist_ptr", "s32", (rows, nbins), out=True), Scalar("n", "s32", n)],
                      {"NBINS": nbins, "BLOCK": block}, (rows,), "ref_block_ops"))
    n, nbins = 1000, 37
    cases.append(Case("atomics", atomics_kernel,
                      [Buf("x_ptr", "s32", (n,), ["randint", 0, 1 << 20]), Buf("h16_ptr", "f16", (nbins,), out=True),
                       Buf("hb16_ptr", "bf16", (nbins,), out=True),
                       Buf("ints_ptr", "s32", (4, nbins), ["randint", 1 << 20, 1 << 21], out=True),
                       Scalar("n", "s32", n), Scalar("nbins", "s32", nbins)],
                      {"BLOCK": 256}, (cdiv(n, 256),), "ref_atomics"))
    return cases


# ---------------------------------------------------------------------------
# numpy references: (inputs: name -> decoded array or scalar value) -> {output name: expected}
# ---------------------------------------------------------------------------

def ref_add(v):
    return {"out_ptr": v["x_ptr"] + v["y_ptr"]}


def ref_math(v):
    x = v["x_ptr"]
    erf = np.vectorize(math.erf)
    return {"out_ptr": np.stack([
        0.5 * x * (1 + erf(x / math.sqrt(2))), np.tanh(x), np.exp(-x * x), 1 / (1 + np.exp(-x)), np.log(1 + x * x),
        np.sqrt(np.abs(x)), np.sin(x) * np.cos(x), 1 / np.sqrt(1 + x * x), np.exp2(x), x / (1 + np.abs(x)), x / 3,
        np.floor(np.float32(x) * np.float32(2.5)) + np.ceil(np.float32(x) * np.float32(0.5)), x * x - 1,
        np.abs(x) ** 1.5, np.log2(1 + np.abs(x)), np.arctan2(x, 1.5)])}


def ref_softmax(v):
    x = v["in_ptr"]
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {"out_ptr": e / e.sum(axis=1, keepdims=True)}


def ref_layernorm(v):
    N = v["N"]
    x = v["x_ptr"][:, :N]
    mean = x.mean(axis=1)
    rstd = 1 / np.sqrt(x.var(axis=1) + v["eps"])
    y = np.zeros_like(v["x_ptr"])  # the padding columns are never written
    y[:, :N] = (x - mean[:, None]) * rstd[:, None] * v["w_ptr"] + v["b_ptr"]
    return {"y_ptr": y, "mean_ptr": mean, "rstd_ptr": rstd}


def ref_rmsnorm(v):
    x = v["x_ptr"]
    r = 1 / np.sqrt((x * x).mean(axis=1, keepdims=True) + v["eps"])
    return {"y_ptr": x * r * v["w_ptr"]}


def ref_row_reduce(v):
    x = v["x_ptr"]
    return {"sum_ptr": x.sum(axis=1), "max_ptr": x.max(axis=1), "argmax_ptr": x.argmax(axis=1), "min_ptr": x.min(axis=1)}


def ref_scan(v):
    return {"csum_ptr": np.cumsum(v["x_ptr"], axis=1), "icsum_ptr": np.cumsum(v["i_ptr"], axis=1),
            "cmax_ptr": np.maximum.accumulate(v["x_ptr"], axis=1)}


def ref_histogram(v):
    nbins = v["nbins"]
    bins = v["x_ptr"] % nbins
    hmax = np.zeros(nbins, dtype=np.int64)
    np.maximum.at(hmax, bins, v["x_ptr"])
    return {"hist_ptr": np.bincount(bins, minlength=nbins), "wsum_ptr": np.bincount(bins, v["w_ptr"], minlength=nbins),
            "hmax_ptr": hmax}


def ref_matmul(v):
    return {"c_ptr": v["a_ptr"] @ v["b_ptr"]}


ref_matmul_tma = ref_matmul


def ref_attention(v):
    q, k, val = v["q_ptr"], v["k_ptr"], v["v_ptr"]
    s = np.einsum("hmd,hnd->hmn", q, k) * v["sm_scale"]
    p = np.exp(s - s.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    return {"out_ptr": np.einsum("hmn,hnd->hmd", p, val)}


def ref_transpose(v):
    return {"y_ptr": v["x_ptr"].T}


def ref_select(v):
    x, y, lo, hi = v["x_ptr"], v["y_ptr"], v["lo"], v["hi"]
    with np.errstate(invalid="ignore"):
        return {"out_ptr": np.stack([
            np.where(x > 0, x, x * np.float32(v["slope"])), np.clip(x, lo, hi), np.maximum(x, y), np.minimum(x, y),
            np.where(np.isnan(y), -7.0, np.where(x < y, x, y)),
            np.where((x > lo) & (x < hi), 1.0, 0.0) + np.where(x >= y, 2.0, 0.0)])}


def _wrap(values, bits):
    """Two's-complement wrap of integer values (any width) to `bits`, as int64."""
    m, half = 1 << bits, 1 << (bits - 1)
    flat = [(int(x) + half) % m - half for x in np.ravel(values).tolist()]
    return np.array(flat, dtype=np.int64).reshape(np.shape(values))


def _cdiv_trunc(a, b):
    """C division (toward zero) and remainder (sign of the dividend), as PTX div/rem."""
    q = np.abs(a) // np.abs(b) * np.sign(a) * np.sign(b)
    return q, a - q * b


def ref_int_ops(v):
    a, b, d, s = v["a_ptr"], v["b_ptr"], v["d"], v["s"]
    ua, ub = a % 2**32, b % 2**32
    q, r = _cdiv_trunc(a, b)
    qd, rd = _cdiv_trunc(a, np.full_like(a, d))
    q64, _ = _cdiv_trunc(a * b * 12345, np.full_like(a, d))
    _, r64 = _cdiv_trunc(a * 2**20, b)
    rows = [q, r, qd, rd, a * 2**s, a >> s, ua >> s, ua // d, ua % (ub | 1), a * b * 7919, (ua.astype(np.uint64) * ub.astype(np.uint64)) >> np.uint64(32),
            (a ^ b) & (a | ~b), [x << (y & 31) for x, y in zip(a.tolist(), b.tolist())], a >> (b & 31),
            np.abs(a) + np.maximum(a, b) - np.minimum(a, b)]
    return {"out_ptr": np.stack([_wrap(row, 32) for row in rows]), "wide_ptr": np.stack([q64, r64])}


def ref_stencil(v):
    x = v["x_ptr"]
    H, W = x.shape
    up = np.vstack([np.full((1, W), -1.0), x[:-1]])
    down = np.vstack([x[1:], np.full((1, W), -1.0)])
    left = np.hstack([np.full((H, 1), 0.5), x[:, :-1]])
    right = np.hstack([x[:, 1:], np.full((H, 1), 0.5)])
    return {"out_ptr": 4 * x - up - down - left - right}


def _f16_toward_zero(x):
    nearest = x.astype(np.float16)
    over = np.abs(nearest.astype(np.float64)) > np.abs(x)
    return np.where(over, np.nextafter(nearest, np.float16(0)), nearest).astype(np.float64)


def ref_cast(v):
    x, xi = v["x_ptr"], v["i_ptr"]
    with np.errstate(over="ignore"):
        f16_of_int = xi.astype(np.float16).astype(np.float64)
    return {"e4m3_ptr": FP8["e4m3"][fp8_encode(x, "e4m3")], "e5m2_ptr": FP8["e5m2"][fp8_encode(x, "e5m2")],
            "h_ptr": _f16_toward_zero(x), "bh_ptr": bf16_decode((x.astype(np.float32).view(np.uint32) >> 16)),
            "i_out_ptr": np.stack([np.trunc(x), np.trunc(np.float32(x) * np.float32(0.3))]).astype(np.int64),
            "f_out_ptr": np.stack([xi.astype(np.float32), x.astype(np.float16), f16_of_int,
                                   bf16_decode(bf16_encode(x))]).astype(np.float64)}


def philox_randint(seed, offsets, rounds=10):
    """tl.randint: Philox-4x32 of counter (offset, 0, 0, 0) under key (seed low, seed high); the first word."""
    m32 = np.uint64(0xFFFFFFFF)
    c0 = np.asarray(offsets, dtype=np.uint64) & m32
    c1 = c2 = c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)
    a, b = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(rounds):
        pa, pb = a * c0, b * c2  # 32 x 32 -> 64 bits
        c0, c1, c2, c3 = ((pb >> np.uint64(32)) ^ c1 ^ k0, pb & m32, (pa >> np.uint64(32)) ^ c3 ^ k1, pa & m32)
        k0, k1 = (k0 + np.uint64(0x9E3779B9)) & m32, (k1 + np.uint64(0xBB67AE85)) & m32
    return c0


def ref_dropout(v):
    bits = philox_randint(v["seed"], np.arange(v["n"]))
    signed = bits.astype(np.uint32).view(np.int32)
    uniform = np.where(signed < 0, ~signed, signed).astype(np.float32) * np.float32(4.6566127342e-10)
    keep = uniform > np.float32(v["p"])
    return {"bits_ptr": bits.astype(np.int64),
            "out_ptr": np.where(keep, np.float32(v["x_ptr"]) / (np.float32(1) - np.float32(v["p"])), 0.0)}


def ref_block_ops(v):
    x, k = v["x_ptr"], v["k_ptr"]
    rows, n = x.shape
    block = 256
    padded = np.hstack([x, np.full((rows, block - n), np.inf)])
    return {"sorted_ptr": np.sort(x, axis=1), "desc_ptr": -np.sort(-x, axis=1), "flip_ptr": padded[:, ::-1],
            "gather_ptr": padded[:, (np.arange(block) * 7) % block],
            "hist_ptr": np.stack([np.bincount(r, minlength=16) for r in k])}


def ref_atomics(v):
    x, nbins = v["x_ptr"], v["nbins"]
    bins = x % nbins
    counts = np.bincount(bins, minlength=nbins)
    ints = v["ints_ptr"].copy()
    for value, b in zip(x.tolist(), bins.tolist()):
        ints[0, b] = min(ints[0, b], value)
        ints[1, b] &= value | 0x10000
        ints[2, b] |= value
        ints[3, b] ^= value
    return {"h16_ptr": counts * 0.5, "hb16_ptr": counts * 0.25, "ints_ptr": ints}


REFERENCES = {name: fn for name, fn in globals().items() if name.startswith("ref_")}


# ---------------------------------------------------------------------------
# gen: compile every case for every target, write the PTX and the manifest
# ---------------------------------------------------------------------------

def compile_case(case, cc):
    """Compiles `case` as Triton's JIT would for its arguments; returns (kernel, runtime params)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    by_name = {p.name: p for p in case.params}
    signature, constexprs, attrs, runtime = {}, dict(case.constexprs), {}, []
    for index, arg in enumerate(case.fn.arg_names):
        if arg in constexprs:
            signature[arg] = "constexpr"
            continue
        p = by_name[arg]
        if isinstance(p, Buf):
            signature[arg] = "*" + DTYPES[p.dtype][0]
            attrs[(index,)] = [["tt.divisibility", 16]]  # torch allocations are 16-byte aligned
        elif isinstance(p.value, int) and p.value == 1:
            signature[arg] = "constexpr"  # the JIT makes an integer 1 a constant
            constexprs[arg] = 1
            continue
        else:
            signature[arg] = DTYPES[p.dtype][0]
            if isinstance(p.value, int) and p.value % 16 == 0:
                attrs[(index,)] = [["tt.divisibility", 16]]
        runtime.append(p)
    if len(by_name) != len(set(case.fn.arg_names) - set(case.constexprs)):
        raise ValueError(f"{case.name}: params do not match the arguments of {case.fn.__name__}")
    src = ASTSource(fn=case.fn, signature=signature, constexprs=constexprs, attrs=attrs)
    options = {"num_warps": case.num_warps, "num_stages": case.num_stages, "enable_fp_fusion": True}
    return triton.compile(src, target=GPUTarget("cuda", cc, 32), options=options), runtime, constexprs


def buffer_entry(p, case, role):
    entry = {"name": p.name, "kind": "buffer", "type": p.dtype, "ptxforge_type": DTYPES[p.dtype][1],
             "shape": list(p.shape), "count": int(np.prod(p.shape)), "role": role}
    if p.init is not None:
        entry["init"] = list(p.init)
        entry["seed"] = zlib.crc32(f"{case.name}/{p.name}".encode())
    if p.out:
        entry["tol"] = list(p.tol or DEFAULT_TOL.get(p.dtype, (0, 0))) if p.dtype in FLOATS else [0, 0]
    return entry


def manifest_entry(case, cc, kernel, runtime, constexprs, path):
    md = kernel.metadata
    params = []
    for p in runtime:
        if isinstance(p, Buf):
            params.append(buffer_entry(p, case, "inout" if p.out and p.init else "output" if p.out else "input"))
        else:
            params.append({"name": p.name, "kind": "scalar", "type": p.dtype, "ptxforge_type": DTYPES[p.dtype][1],
                           "value": p.value})
    programs = int(np.prod(case.grid))
    for name, size in (("global_scratch", md.global_scratch_size), ("profile_scratch", md.profile_scratch_size)):
        count = max(1, size * programs)  # Triton's launcher: size per program, for the whole grid
        params.append({"name": name, "kind": "buffer", "type": "u8", "ptxforge_type": "u8", "shape": [count],
                       "count": count, "role": "scratch", "bytes_per_program": size})
    text = path.read_text()
    version = next((line.split()[1] for line in text.splitlines() if line.startswith(".version")), "?")
    target = next((line.split()[1] for line in text.splitlines() if line.startswith(".target")), "?")
    grid = list(case.grid) + [1] * (3 - len(case.grid))
    return {"file": path.name, "case": case.name, "kernel": md.name, "cc": cc, "target": target, "ptx_version": version,
            "grid": grid, "block": [case.num_warps * 32, 1, 1], "shared_bytes": md.shared,
            "num_warps": case.num_warps, "num_stages": case.num_stages,
            "constexprs": {k: v for k, v in constexprs.items()}, "params": params, "reference": case.reference}


def count_entry_params(ptx, name):
    start = ptx.index(f".entry {name}(")
    return ptx[start:ptx.index(")", start)].count(".param")


def gen(args):
    if triton is None:
        sys.exit("gen needs Triton (pip install triton)")
    ptxas = args.ptxas or os.environ.get("TRITON_PTXAS_PATH") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    # Triton writes the highest .version the named ptxas knows; it asks
    # TRITON_PTXAS_PATH below sm_90 and TRITON_PTXAS_BLACKWELL_PATH from sm_90.
    os.environ["TRITON_PTXAS_PATH"] = ptxas
    os.environ["TRITON_PTXAS_BLACKWELL_PATH"] = ptxas
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    entries, dropped = [], []
    for case in build_cases():
        if args.only and args.only not in case.name:
            continue
        for cc in case.targets:
            tag = f"{case.name}_sm{cc}"
            try:
                kernel, runtime, constexprs = compile_case(case, cc)
            except Exception as error:  # Triton rejects the kernel for this target: leave it out, say so
                first = (str(error).strip().splitlines() or [type(error).__name__])[-1]
                dropped.append({"file": tag + ".ptx", "error": first})
                print(f"drop  {tag}: {first}")
                continue
            path = out / f"{tag}.ptx"
            path.write_text(kernel.asm["ptx"])
            entry = manifest_entry(case, cc, kernel, runtime, constexprs, path)
            declared = count_entry_params(kernel.asm["ptx"], entry["kernel"])
            if declared != len(entry["params"]):
                raise RuntimeError(f"{tag}: the entry declares {declared} parameters, the manifest has "
                                   f"{len(entry['params'])}")
            entries.append(entry)
            print(f"wrote {path.name}: {entry['target']} .version {entry['ptx_version']}, grid {entry['grid']}, "
                  f"block {entry['block'][0]}, shared {entry['shared_bytes']} B")
    manifest = {"generator": "scripts/triton-ptx.py", "triton": triton.__version__, "ptxas": ptxas,
                "files": entries, "dropped": dropped}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(entries)} files, {len(dropped)} dropped; manifest {out / 'manifest.json'}")


# ---------------------------------------------------------------------------
# run: launch every file with `ptxforge run`, compare with numpy
# ---------------------------------------------------------------------------

def compare(name, dtype, got, want, tol, limit=5):
    """Empty if `got` matches `want`; else lines that say where and by how much."""
    want = np.asarray(want)
    if got.shape != want.shape:
        return [f"{name}: shape {got.shape}, expected {want.shape}"]
    if dtype in FLOATS:
        want = want.astype(np.float64)
        atol, rtol = tol
        both_nan = np.isnan(got) & np.isnan(want)
        with np.errstate(invalid="ignore"):
            err = np.abs(got - want)
            ok = both_nan | (got == want) | (err <= atol + rtol * np.abs(want))
    else:
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        ok = got == want
    bad = np.argwhere(~ok)
    if len(bad) == 0:
        return []
    finite = np.where(np.isfinite(err), err, np.inf)[~ok]
    lines = [f"{name}: {len(bad)}/{got.size} elements differ (max |err| {finite.max():.4g}; tol {tol})"]
    for index in bad[:limit]:
        i = tuple(int(k) for k in index)
        lines.append(f"  {name}[{', '.join(map(str, i))}] = {got[i]!r}, expected {want[i]!r}")
    return lines


def run_file(entry, folder, work, ptxforge, executor, timeout_s):
    """Launches one file; returns (status, detail lines, the command)."""
    command = [ptxforge, "run", str(folder / entry["file"]), "-k", entry["kernel"],
               "--grid", ",".join(map(str, entry["grid"])), "--block", ",".join(map(str, entry["block"])),
               "--smem", str(entry["shared_bytes"]), "--executor", executor, "--format", "json",
               "--timeout-ms", str(timeout_s * 1000)]
    values, stem = {}, work / entry["file"].removesuffix(".ptx")
    for p in entry["params"]:
        if p["kind"] == "scalar":
            command += ["--scalar", f"{p['name']}={p['ptxforge_type']}:{p['value']}"]
            values[p["name"]] = p["value"]
            continue
        spec = f"{p['name']}={p['ptxforge_type']}:{p['count']}"
        if "init" in p:
            storage = make_input(p["init"], p["type"], tuple(p["shape"]), p["seed"])
            path = Path(f"{stem}.{p['name']}.in")
            storage.tofile(path)
            spec += f":@{path}"
            values[p["name"]] = decode(storage, p["type"])
        command += ["--buffer", spec]
        if p["role"] in ("output", "inout"):
            command += ["--dump", f"{p['name']}={stem}.{p['name']}.out"]
    shown = " ".join(command)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s + 30)
    except subprocess.TimeoutExpired:
        return "timeout", [f"no answer in {timeout_s + 30} s"], shown
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        return "crash", [f"exit status {done.returncode}, no JSON report", *tail], shown
    findings = [("(fatal) " if f.get("fatal") else "") + str(f.get("message", f)) for f in report.get("findings", [])]
    if report.get("error"):
        error = report["error"]
        message = error if isinstance(error, str) else json.dumps(error)
        return ("timeout" if "timeout" in message.lower() else "error"), [message, *findings[:5]], shown
    expected = REFERENCES[entry["reference"]](values)
    lines = []
    for p in entry["params"]:
        if p["kind"] != "buffer" or p["role"] not in ("output", "inout"):
            continue
        storage = np.fromfile(f"{stem}.{p['name']}.out", dtype=DTYPES[p["type"]][2]).reshape(p["shape"])
        lines += compare(p["name"], p["type"], decode(storage, p["type"]), expected[p["name"]], tuple(p["tol"]))
    # Findings that did not stop the launch (initcheck, ...) are reported; the outputs are still compared.
    status = "mismatch" if lines else "findings" if findings or not report.get("ok") else "ok"
    return status, lines + findings[:5], shown


def run(args):
    folder = Path(args.outdir)
    manifest = json.loads((folder / "manifest.json").read_text())
    ptxforge = str(Path(args.ptxforge).resolve())
    expected = read_expectations(args.expect) if args.expect else {}
    counts, unexpected = {}, []
    with tempfile.TemporaryDirectory(prefix="triton-ptx-") as scratch:
        for entry in manifest["files"]:
            if args.only and args.only not in entry["file"]:
                continue
            status, lines, command = run_file(entry, folder, Path(scratch), ptxforge, args.executor, args.timeout)
            counts[status] = counts.get(status, 0) + 1
            want = expected.get(entry["file"], "ok")
            if status != want:
                unexpected.append(f"{entry['file']}: {status}, expected {want}")
            print(f"{status:8} {entry['file']}" + (f" (expected: {want})" if want != "ok" else ""))
            for line in lines + ([command] if status != "ok" or args.verbose else []):
                print("         " + line)
            sys.stdout.flush()
    print("summary: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for drop in manifest.get("dropped", []):
        print(f"(not generated: {drop['file']}: {drop['error']})")
    if args.expect:
        for line in unexpected:
            print("UNEXPECTED " + line)
        return 1 if unexpected else 0
    return 0 if set(counts) <= {"ok"} else 1


def read_expectations(path):
    """FILE STATUS lines (`#` starts a comment): files whose status is known not to be `ok`."""
    expected = {}
    for line in Path(path).read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) == 2:
            expected[words[0]] = words[1]
        elif words:
            sys.exit(f"{path}: expected `FILE STATUS`, got: {line}")
    return expected


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    g = sub.add_parser("gen", help="compile the kernels with Triton into OUTDIR")
    g.add_argument("outdir")
    g.add_argument("--ptxas", help="the ptxas whose PTX ISA Triton writes for (default: $TRITON_PTXAS_PATH, "
                                   "ptxas on PATH, /usr/local/cuda/bin/ptxas)")
    g.add_argument("--only", help="only cases whose name holds this text")
    r = sub.add_parser("run", help="run OUTDIR's files with ptxforge and compare with numpy")
    r.add_argument("outdir")
    r.add_argument("--ptxforge", default=str(REPO / "build" / "ptxforge"))
    r.add_argument("--executor", default="emu", choices=["emu", "gpu", "auto"])
    r.add_argument("--only", help="only files whose name holds this text")
    r.add_argument("--timeout", type=int, default=120, help="seconds per launch (default 120)")
    r.add_argument("-v", "--verbose", action="store_true", help="print the command of passing files too")
    r.add_argument("--expect", help="FILE STATUS lines: the status each listed file must get (others: ok); "
                                    "exit 1 on any other outcome")
    args = parser.parse_args()
    if args.mode == "gen":
        gen(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())

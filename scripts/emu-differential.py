#!/usr/bin/env python3
"""The emulator beside a GPU, one instruction at a time.

    emu-differential.py gen DIR              write DIR/OP.ptx and DIR/OP.in for every op
    emu-differential.py run PTXFORGE DIR EXECUTOR [OP...]
                                             run each op's kernel, its outputs in DIR/OP.EXECUTOR
    emu-differential.py compare DIR [--json FILE]
                                             the table of differences between DIR/OP.gpu and DIR/OP.emu

Each op is one PTX instruction (or a short sequence) in a kernel of 4096
threads: thread t reads four 32-bit words from in[4t..4t+3] (seen as u32, f32,
two f64, or eight f16/bf16 halves), runs the op, and writes two words to
out[2t..2t+1]. The inputs mix ordinary values, the edges of each type (zeros
of both signs, infinities, NaNs, subnormals, the largest and smallest
normals, shift amounts around the width) and raw bits, from a seed fixed per
op, so a GPU run and an emulator run see the same words. An exact op must
agree bit for bit (a NaN with any payload counts as the same NaN); an .approx
op must stay within the sum of both sides' documented error bounds, and agree
exactly on its special points (zeros, infinities, NaNs).

Ops ptxas refuses for the target are dropped at `gen` (said on stderr). The
GPU machine runs `gen`, both executors and `compare` in one go
(scripts/gpu-emu-differential.sh).
"""
import json
import math
import os
import subprocess
import sys
import zlib

import numpy as np

THREADS, BLOCK = 4096, 256

# ---------------------------------------------------------------------------
# The ops: name -> (input kind, PTX body, tolerance). The body reads %r10..%r13
# (and their views %f10..%f13, %rd10/%rd11 = {r10,r11}/{r12,r13}, %fd10/%fd11,
# %h10..%h17 = the halves of r10..r13, low first) and leaves its result in
# %r20 and %r21. Tolerance: None is exact; ("f32", ulps) or ("f16", ulps) or
# ("rel", bound) for .approx results.

OPS = {}


def op(name, kind, body, tol=None):
    OPS[name] = (kind, body, tol)


def f32(name, instr, nargs=2, kind="f32", tol=None):
    args = ", ".join(f"%f{10 + i}" for i in range(nargs))
    op(name, kind, f"{instr} %f20, {args};\n  mov.b32 %r20, %f20;", tol)


def f64(name, instr, nargs=2, tol=None):
    args = ", ".join(["%fd10", "%fd11", "%fd10"][:nargs])
    op(name, "f64", f"{instr} %fd20, {args};\n  mov.b64 {{%r20, %r21}}, %fd20;", tol)


def u32(name, instr, nargs=2):
    args = ", ".join(f"%r{10 + i}" for i in range(nargs))
    op(name, "u32", f"{instr} %r20, {args};")


def u64(name, instr, nargs=2, shift=False):
    args = "%rd10, %r12" if shift else ", ".join(["%rd10", "%rd11", "%rd10"][:nargs])
    op(name, "u32", f"{instr} %rd20, {args};\n  mov.b64 {{%r20, %r21}}, %rd20;")


def half(name, instr, nargs=2, kind="f16", tol=None):
    args = ", ".join(f"%h{10 + i}" for i in range(nargs))
    op(name, kind, f"{instr} %h20, {args};\n  mov.b32 %r20, {{%h20, %h21}};", tol)


def half2(name, instr, nargs=2, kind="f16", tol=None):
    args = ", ".join(f"%r{10 + i}" for i in range(nargs))
    op(name, kind, f"{instr} %r20, {args};", tol)


def predicate_mask(kind, compares, type_, a="%f10", b="%f11"):
    body = ["mov.u32 %r20, 0;"]
    for i, cmp in enumerate(compares):
        body.append(f"setp.{cmp}.{type_} %p1, {a}, {b};\n  selp.u32 %r22, {1 << i}, 0, %p1;\n  or.b32 %r20, %r20, %r22;")
    return "\n  ".join(body)


# Integer arithmetic.
for instr in ["add.sat.s32", "sub.sat.s32", "mul.hi.s32", "mul.hi.u32", "mul.lo.u32", "mul24.hi.s32",
              "mul24.lo.s32", "mul24.hi.u32", "div.s32", "div.u32", "rem.s32", "rem.u32", "min.s32", "max.u32",
              "min.u32", "max.s32", "max.relu.s32", "min.s16x2", "max.u16x2", "add.s16x2", "sub.s16x2"]:
    u32(instr, instr)
for instr in ["mad.hi.s32", "mad.hi.u32", "mad.hi.sat.s32", "mad.lo.s32", "mad24.hi.u32", "mad24.lo.s32", "sad.s32",
              "sad.u32", "dp4a.s32.s32", "dp4a.u32.s32", "dp4a.s32.u32", "dp2a.lo.s32.u32", "dp2a.hi.u32.s32",
              "bfe.u32", "bfe.s32", "prmt.b32", "shf.l.wrap.b32", "shf.r.wrap.b32", "shf.l.clamp.b32",
              "shf.r.clamp.b32", "lop3.b32"]:
    if instr == "lop3.b32":
        for lut in (0x96, 0xE8, 0x1A, 0xFE):
            op(f"lop3.b32.{lut:#04x}", "u32", f"lop3.b32 %r20, %r10, %r11, %r12, {lut:#04x};")
    else:
        u32(instr, instr, 3)
for mode in ["f4e", "b4e", "rc8", "ecl", "ecr", "rc16"]:
    op(f"prmt.b32.{mode}", "u32", f"prmt.b32.{mode} %r20, %r10, %r11, %r12;")
u32("bfi.b32", "bfi.b32", 4)
for instr in ["abs.s32", "neg.s32", "popc.b32", "clz.b32", "bfind.u32", "bfind.s32", "bfind.shiftamt.u32", "brev.b32",
              "not.b32", "cnot.b32", "abs.s16x2"]:
    u32(instr, instr, 1)
for instr in ["shl.b32", "shr.u32", "shr.s32"]:
    op(instr, "u32", f"{instr} %r20, %r10, %r12;")
for instr in ["bmsk.clamp.b32", "bmsk.wrap.b32"]:
    op(instr, "u32", f"{instr} %r20, %r11, %r12;")
for instr in ["szext.clamp.s32", "szext.wrap.u32", "szext.clamp.u32"]:
    op(instr, "u32", f"{instr} %r20, %r10, %r12;")
op("fns.b32", "u32", "and.b32 %r22, %r11, 31;\n  fns.b32 %r20, %r10, %r22, %r12;")
op("mul.wide.s32", "u32", "mul.wide.s32 %rd20, %r10, %r11;\n  mov.b64 {%r20, %r21}, %rd20;")
op("mul.wide.u32", "u32", "mul.wide.u32 %rd20, %r10, %r11;\n  mov.b64 {%r20, %r21}, %rd20;")
op("add.cc+addc", "u32", "add.cc.u32 %r20, %r10, %r11;\n  addc.cc.u32 %r21, %r12, %r13;\n  addc.u32 %r22, 0, 0;\n"
   "  add.u32 %r21, %r21, %r22;")
op("sub.cc+subc", "u32", "sub.cc.u32 %r20, %r10, %r11;\n  subc.cc.u32 %r21, %r12, %r13;\n  subc.u32 %r22, 0, 0;\n"
   "  xor.b32 %r21, %r21, %r22;")
op("mad.lo.cc+madc.hi", "u32", "mad.lo.cc.u32 %r20, %r10, %r11, %r12;\n  madc.hi.u32 %r21, %r10, %r11, %r13;")
for instr in ["add.s64", "sub.s64", "mul.lo.u64", "mul.hi.u64", "mul.hi.s64", "div.u64", "div.s64", "rem.u64", "rem.s64",
              "min.s64", "max.u64"]:
    u64(instr, instr)
u64("mad.lo.u64", "mad.lo.u64", 3)
for instr in ["shl.b64", "shr.u64", "shr.s64"]:
    u64(instr, instr, shift=True)
for instr in ["popc.b64", "clz.b64", "bfind.u64", "bfind.s64"]:
    op(instr, "u32", f"{instr} %r20, %rd10;")
u64("brev.b64", "brev.b64", 1)
op("shf.l.wrap.b32+shl.b64 pair", "u32", "shf.l.wrap.b32 %r21, %r10, %r11, %r12;\n  shl.b32 %r20, %r10, %r12;")
for src in ["s8", "u8", "s16", "u16"]:
    op(f"cvt.s32.{src}", "u32", f"cvt.s32.{src} %r20, %r10;")
for dst in ["s8", "u8", "s16", "u16"]:
    op(f"cvt.sat.{dst}.s32", "u32", f"cvt.sat.{dst}.s32 %r20, %r10;")
op("cvt.sat.u32.s64", "u32", "cvt.sat.u32.s64 %r20, %rd10;")
op("cvt.sat.s32.u64", "u32", "cvt.sat.s32.u64 %r20, %rd10;")
op("cvt.s64.s32", "u32", "cvt.s64.s32 %rd20, %r10;\n  mov.b64 {%r20, %r21}, %rd20;")

# Integer to float.
for instr in ["cvt.rn.f32.s32", "cvt.rz.f32.u32", "cvt.rm.f32.s32", "cvt.rp.f32.u32"]:
    op(instr, "u32", f"{instr} %f20, %r10;\n  mov.b32 %r20, %f20;")
for instr in ["cvt.rn.f32.s64", "cvt.rn.f32.u64", "cvt.rz.f32.s64"]:
    op(instr, "u32", f"{instr} %f20, %rd10;\n  mov.b32 %r20, %f20;")
for instr in ["cvt.rn.f64.s64", "cvt.rz.f64.u64"]:
    op(instr, "u32", f"{instr} %fd20, %rd10;\n  mov.b64 {{%r20, %r21}}, %fd20;")
op("cvt.rn.f16.s32", "u32", "cvt.rn.f16.s32 %h20, %r10;\n  mov.b32 %r20, {%h20, %h21};")

# f32.
for rnd in ["rn", "rz", "rm", "rp"]:
    f32(f"add.{rnd}.f32", f"add.{rnd}.f32")
    f32(f"mul.{rnd}.f32", f"mul.{rnd}.f32")
    f32(f"fma.{rnd}.f32", f"fma.{rnd}.f32", 3)
    f32(f"div.{rnd}.f32", f"div.{rnd}.f32")
    f32(f"rcp.{rnd}.f32", f"rcp.{rnd}.f32", 1)
    f32(f"sqrt.{rnd}.f32", f"sqrt.{rnd}.f32", 1)
for instr in ["sub.rn.f32", "add.ftz.f32", "add.sat.f32", "mul.ftz.f32", "mul.sat.f32", "min.f32", "max.f32",
              "min.NaN.f32", "max.NaN.f32", "min.ftz.f32", "max.ftz.NaN.f32", "min.xorsign.abs.f32",
              "max.xorsign.abs.f32", "copysign.f32", "div.rn.ftz.f32", "sub.ftz.sat.f32"]:
    f32(instr, instr)
f32("fma.rn.ftz.sat.f32", "fma.rn.ftz.sat.f32", 3)
f32("mad.rn.f32", "mad.rn.f32", 3)
for instr in ["abs.f32", "neg.f32", "abs.ftz.f32", "neg.ftz.f32", "rcp.rn.ftz.f32", "sqrt.rn.ftz.f32"]:
    f32(instr, instr, 1)
f32("div.full.f32", "div.full.f32", tol=("f32", 2))  # "within 2 ulp": the GPU's is not IEEE-rounded
f32("div.approx.f32", "div.approx.f32", tol=("f32", 2))
f32("div.approx.ftz.f32", "div.approx.ftz.f32", tol=("f32", 2))
f32("rcp.approx.f32", "rcp.approx.f32", 1, tol=("f32", 1))
f32("rcp.approx.ftz.f32", "rcp.approx.ftz.f32", 1, tol=("f32", 1))
f32("sqrt.approx.f32", "sqrt.approx.f32", 1, tol=("rel", 2 ** -23))
f32("rsqrt.approx.f32", "rsqrt.approx.f32", 1, tol=("rel", 2 ** -22.9))
f32("rsqrt.approx.ftz.f32", "rsqrt.approx.ftz.f32", 1, tol=("rel", 2 ** -22.9))
f32("ex2.approx.f32", "ex2.approx.f32", 1, tol=("f32", 2))
f32("ex2.approx.ftz.f32", "ex2.approx.ftz.f32", 1, tol=("f32", 2))
f32("lg2.approx.f32", "lg2.approx.f32", 1, tol=("abs-or-rel", 2 ** -22))
f32("sin.approx.f32", "sin.approx.f32", 1, tol=("abs", 2 ** -20.5))
f32("cos.approx.f32", "cos.approx.f32", 1, tol=("abs", 2 ** -20.5))
f32("tanh.approx.f32", "tanh.approx.f32", 1, tol=("rel", 2 ** -10.987))
op("setp.f32 (all 14)", "f32", predicate_mask("f32", ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu",
                                                       "gtu", "geu", "num", "nan"], "f32"))
op("set.ltu.u32.f32", "f32", "set.ltu.u32.f32 %r20, %f10, %f11;")
op("set.ge.f32.f32", "f32", "set.ge.f32.f32 %f20, %f10, %f11;\n  mov.b32 %r20, %f20;")
op("testp.f32 (all 6)", "f32", "mov.u32 %r20, 0;\n  " + "\n  ".join(
    f"testp.{t}.f32 %p1, %f10;\n  selp.u32 %r22, {1 << i}, 0, %p1;\n  or.b32 %r20, %r20, %r22;"
    for i, t in enumerate(["finite", "infinite", "number", "notanumber", "normal", "subnormal"])))
op("slct.f32.s32", "f32", "slct.f32.s32 %f20, %f10, %f11, %r12;\n  mov.b32 %r20, %f20;")
for rnd in ["rni", "rzi", "rmi", "rpi"]:
    op(f"cvt.{rnd}.s32.f32", "f32", f"cvt.{rnd}.s32.f32 %r20, %f10;")
    op(f"cvt.{rnd}.u32.f32", "f32", f"cvt.{rnd}.u32.f32 %r20, %f10;")
    f32(f"cvt.{rnd}.f32.f32", f"cvt.{rnd}.f32.f32", 1)
op("cvt.rzi.s64.f32", "f32", "cvt.rzi.s64.f32 %rd20, %f10;\n  mov.b64 {%r20, %r21}, %rd20;")
op("cvt.rni.u64.f32", "f32", "cvt.rni.u64.f32 %rd20, %f10;\n  mov.b64 {%r20, %r21}, %rd20;")
op("cvt.rni.s16.f32", "f32", "cvt.rni.s16.f32 %h20, %f10;\n  mov.b32 %r20, {%h20, %h21};")
op("cvt.rzi.u8.f32", "f32", "cvt.rzi.u8.f32 %h20, %f10;\n  mov.b32 %r20, {%h20, %h21};")
f32("cvt.sat.f32.f32", "cvt.sat.f32.f32", 1)
f32("cvt.ftz.f32.f32", "cvt.ftz.f32.f32", 1)
for instr in ["cvt.rn.f16.f32", "cvt.rz.f16.f32", "cvt.rm.f16.f32", "cvt.rp.f16.f32", "cvt.rn.bf16.f32",
              "cvt.rz.bf16.f32", "cvt.rn.relu.f16.f32", "cvt.rn.relu.bf16.f32", "cvt.rn.satfinite.f16.f32"]:
    op(instr, "f32", f"{instr} %h20, %f10;\n  mov.b32 %r20, {{%h20, %h21}};")
for instr in ["cvt.rn.f16x2.f32", "cvt.rn.bf16x2.f32", "cvt.rz.f16x2.f32", "cvt.rn.relu.bf16x2.f32",
              "cvt.rn.satfinite.relu.f16x2.f32"]:
    op(instr, "f32", f"{instr} %r20, %f10, %f11;")
for instr in ["cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32", "cvt.rn.satfinite.relu.e4m3x2.f32"]:
    op(instr, "f32", f"{instr} %h20, %f10, %f11;\n  mov.b32 %r20, {{%h20, %h21}};")
for instr in ["cvt.rna.tf32.f32", "cvt.rna.satfinite.tf32.f32", "cvt.rn.satfinite.tf32.f32", "cvt.rz.satfinite.tf32.f32"]:
    op(instr, "f32", f"{instr} %r20, %f10;")
op("cvt.f64.f32", "f32", "cvt.f64.f32 %fd20, %f10;\n  mov.b64 {%r20, %r21}, %fd20;")
op("cvt.ftz.f64.f32", "f32", "cvt.ftz.f64.f32 %fd20, %f10;\n  mov.b64 {%r20, %r21}, %fd20;")

# f64.
for rnd in ["rn", "rz", "rm", "rp"]:
    f64(f"add.{rnd}.f64", f"add.{rnd}.f64")
    f64(f"mul.{rnd}.f64", f"mul.{rnd}.f64")
    f64(f"fma.{rnd}.f64", f"fma.{rnd}.f64", 3)
    f64(f"div.{rnd}.f64", f"div.{rnd}.f64")
    f64(f"rcp.{rnd}.f64", f"rcp.{rnd}.f64", 1)
    f64(f"sqrt.{rnd}.f64", f"sqrt.{rnd}.f64", 1)
for instr in ["min.f64", "max.f64", "sub.rn.f64", "copysign.f64"]:
    f64(instr, instr)
for instr in ["abs.f64", "neg.f64"]:
    f64(instr, instr, 1)
f64("rcp.approx.ftz.f64", "rcp.approx.ftz.f64", 1, tol=("rel-f64-hi", 2 ** -20))
f64("rsqrt.approx.f64", "rsqrt.approx.f64", 1, tol=("rel-f64", 2 ** -22))
op("setp.f64 (all 14)", "f64", predicate_mask("f64", ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu",
                                                       "gtu", "geu", "num", "nan"], "f64", "%fd10", "%fd11"))
for instr in ["cvt.rn.f32.f64", "cvt.rz.f32.f64", "cvt.rm.f32.f64", "cvt.rp.f32.f64", "cvt.rn.ftz.f32.f64"]:
    op(instr, "f64", f"{instr} %f20, %fd10;\n  mov.b32 %r20, %f20;")
for instr in ["cvt.rni.s32.f64", "cvt.rzi.u32.f64", "cvt.rmi.s64.f64", "cvt.rzi.u64.f64"]:
    dst = "%rd20" if "64.f64" in instr else "%r20"
    tail = "\n  mov.b64 {%r20, %r21}, %rd20;" if dst == "%rd20" else ""
    op(instr, "f64", f"{instr} {dst}, %fd10;{tail}")
f64("cvt.rni.f64.f64", "cvt.rni.f64.f64", 1)
op("cvt.rn.f16.f64", "f64", "cvt.rn.f16.f64 %h20, %fd10;\n  mov.b32 %r20, {%h20, %h21};")

# f16 and bf16, scalar and pairs.
for kind in ["f16", "bf16"]:
    for instr in ["add.rn", "sub.rn", "mul.rn", "min", "max", "min.NaN", "max.NaN", "add", "mul"]:
        half(f"{instr}.{kind}", f"{instr}.{kind}", kind=kind)
        half2(f"{instr}.{kind}x2", f"{instr}.{kind}x2", kind=kind)
    for instr in ["fma.rn", "fma.rn.relu"]:
        half(f"{instr}.{kind}", f"{instr}.{kind}", 3, kind=kind)
        half2(f"{instr}.{kind}x2", f"{instr}.{kind}x2", 3, kind=kind)
    for instr in ["neg", "abs"]:
        half(f"{instr}.{kind}", f"{instr}.{kind}", 1, kind=kind)
        half2(f"{instr}.{kind}x2", f"{instr}.{kind}x2", 1, kind=kind)
    op(f"cvt.f32.{kind}", kind, f"cvt.f32.{kind} %f20, %h10;\n  mov.b32 %r20, %f20;")
    op(f"setp.{kind} (all 14)", kind, predicate_mask(kind, ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu",
                                                             "leu", "gtu", "geu", "num", "nan"], kind, "%h10", "%h11"))
for instr in ["fma.rn.sat.f16", "fma.rn.ftz.f16", "add.rn.sat.f16", "mul.rn.ftz.sat.f16"]:
    half(instr, instr, 3 if instr.startswith("fma") else 2)
for instr in ["fma.rn.sat.f16x2", "add.rn.ftz.f16x2", "min.xorsign.abs.f16x2", "max.xorsign.abs.bf16x2"]:
    half2(instr, instr, 3 if instr.startswith("fma") else 2, kind="bf16" if "bf16" in instr else "f16")
# 2^-9.9 relative is two ulps of a value just below a power of two.
half("ex2.approx.f16", "ex2.approx.f16", 1, tol=("f16", 2))
half2("ex2.approx.f16x2", "ex2.approx.f16x2", 1, tol=("f16", 2))
half("tanh.approx.f16", "tanh.approx.f16", 1, tol=("f16", 2))
half("ex2.approx.ftz.bf16", "ex2.approx.ftz.bf16", 1, kind="bf16", tol=("bf16", 1))
for instr in ["cvt.rni.s32.f16", "cvt.rzi.u32.f16", "cvt.rni.s32.bf16"]:
    kind = "bf16" if "bf16" in instr else "f16"
    op(instr, kind, f"{instr} %r20, %h10;")
op("cvt.rn.f16x2.e4m3x2", "u32", "cvt.rn.f16x2.e4m3x2 %r20, %h10;")
op("cvt.rn.f16x2.e5m2x2", "u32", "cvt.rn.f16x2.e5m2x2 %r20, %h10;")
op("cvt.f64.f16", "f16", "cvt.f64.f16 %fd20, %h10;\n  mov.b64 {%r20, %r21}, %fd20;")
op("cvt.rn.bf16.f16", "f16", "cvt.f32.f16 %f21, %h10;\n  cvt.rn.bf16.f32 %h20, %f21;\n  mov.b32 %r20, {%h20, %h21};")

# The warp.
op("shfl.sync.idx", "u32", "shfl.sync.idx.b32 %r20|%p1, %r10, %r11, %r12, 0xffffffff;\n  selp.u32 %r21, 1, 0, %p1;")
op("shfl.sync.up", "u32", "shfl.sync.up.b32 %r20|%p1, %r10, %r11, %r12, 0xffffffff;\n  selp.u32 %r21, 1, 0, %p1;")
op("shfl.sync.down", "u32", "shfl.sync.down.b32 %r20|%p1, %r10, %r11, %r12, 0xffffffff;\n  selp.u32 %r21, 1, 0, %p1;")
op("shfl.sync.bfly", "u32", "shfl.sync.bfly.b32 %r20|%p1, %r10, %r11, %r12, 0xffffffff;\n  selp.u32 %r21, 1, 0, %p1;")
op("vote.sync (ballot, any, all, uni)", "u32",
   "and.b32 %r22, %r10, 0x0101;\n  setp.ne.u32 %p1, %r22, 0;\n  vote.sync.ballot.b32 %r20, %p1, 0xffffffff;\n"
   "  vote.sync.any.pred %p2, %p1, 0xffffffff;\n  vote.sync.all.pred %p3, %p1, 0xffffffff;\n"
   "  vote.sync.uni.pred %p4, %p1, 0xffffffff;\n  selp.u32 %r21, 1, 0, %p2;\n  selp.u32 %r22, 2, 0, %p3;\n"
   "  or.b32 %r21, %r21, %r22;\n  selp.u32 %r22, 4, 0, %p4;\n  or.b32 %r21, %r21, %r22;")
for red in ["add.u32", "min.s32", "max.u32", "min.u32", "max.s32", "and.b32", "or.b32", "xor.b32"]:
    op(f"redux.sync.{red}", "u32", f"redux.sync.{red} %r20, %r10, 0xffffffff;")
op("match.any.sync", "u32", "and.b32 %r22, %r10, 7;\n  match.any.sync.b32 %r20, %r22, 0xffffffff;")
op("match.all.sync", "u32", "and.b32 %r22, %r10, 0x80000001;\n  match.all.sync.b32 %r20|%p1, %r22, 0xffffffff;\n"
   "  selp.u32 %r21, 1, 0, %p1;")

# Atomics on the thread's own word of out (no order between threads to matter).
ATOM_PRE = "st.global.u32 [%rd6], %r10;\n  "
ATOM_POST = "\n  ld.global.u32 %r21, [%rd6];"
for a in ["add.u32", "inc.u32", "dec.u32", "min.s32", "max.u32", "and.b32", "or.b32", "xor.b32", "exch.b32",
          "add.f32", "add.noftz.f16x2", "add.noftz.bf16x2"]:
    op(f"atom.global.{a}", "f32" if a.endswith("f32") else "f16" if "f16" in a else "bf16" if "bf16" in a else "u32",
       ATOM_PRE + f"atom.global.{a} %r20, [%rd6], %r11;" + ATOM_POST)
op("atom.global.cas.b32", "u32", ATOM_PRE + "and.b32 %r22, %r11, 1;\n  xor.b32 %r22, %r22, %r10;\n"
   "  atom.global.cas.b32 %r20, [%rd6], %r22, %r12;" + ATOM_POST)
op("red.global.add.f32", "f32", ATOM_PRE + "red.global.add.f32 [%rd6], %f11;" + ATOM_POST)
op("atom.global.add.f64", "f64", "st.global.u64 [%rd6], %rd10;\n  atom.global.add.f64 %fd20, [%rd6], %fd11;\n"
   "  ld.global.f64 %fd21, [%rd6];\n  mov.b64 {%r20, %r21}, %fd21;")

# Vector atomics (sm_90) on the thread's own 8 bytes of out: r10/r11 there, then
# r12/r13 (as f32, four halves or two pairs) added, or taken the min or max of.
VEC_PRE = "st.global.v2.u32 [%rd6], {%r10, %r11};\n  "
VEC_POST = "\n  ld.global.v2.u32 {%r20, %r21}, [%rd6];"
op("red.global.add.v2.f32", "f32", VEC_PRE + "red.global.add.v2.f32 [%rd6], {%f12, %f13};" + VEC_POST)
op("atom.global.add.v2.f32", "f32", VEC_PRE + "atom.global.add.v2.f32 {%f20, %f21}, [%rd6], {%f12, %f13};" + VEC_POST)
for kind in ["f16", "bf16"]:
    for a in ["add", "min", "max"]:
        op(f"red.global.{a}.noftz.v4.{kind}", kind,
           VEC_PRE + f"red.global.{a}.noftz.v4.{kind} [%rd6], {{%h14, %h15, %h16, %h17}};" + VEC_POST)
        op(f"red.global.{a}.noftz.v2.{kind}x2", kind,
           VEC_PRE + f"red.global.{a}.noftz.v2.{kind}x2 [%rd6], {{%r12, %r13}};" + VEC_POST)
    op(f"atom.global.max.noftz.v2.{kind}x2", kind,
       VEC_PRE + f"atom.global.max.noftz.v2.{kind}x2 {{%r22, %r23}}, [%rd6], {{%r12, %r13}};" + VEC_POST)

# The warp's 8x8 b16 matrices: each lane's four words are a 16-byte row of
# shared memory (the warp's 512 bytes, lane-major).
SHARED_ROWS = ("mov.u32 %r23, sm;\n  shl.b32 %r24, %r3, 4;\n  add.u32 %r25, %r23, %r24;\n"
               "  st.shared.v4.u32 [%r25], {%r10, %r11, %r12, %r13};\n  bar.warp.sync 0xffffffff;\n  ")
for trans in ["", ".trans"]:
    op(f"ldmatrix.x4{trans} (d0, d3)", "u32", SHARED_ROWS +
       f"ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {{%r20, %r26, %r27, %r21}}, [%r25];")
    op(f"ldmatrix.x4{trans} (d1, d2)", "u32", SHARED_ROWS +
       f"ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {{%r26, %r20, %r21, %r27}}, [%r25];")
    op(f"ldmatrix.x2{trans}", "u32", SHARED_ROWS + f"ldmatrix.sync.aligned.m8n8.x2{trans}.shared.b16 {{%r20, %r21}}, [%r25];")
    op(f"ldmatrix.x1{trans}", "u32", SHARED_ROWS + f"ldmatrix.sync.aligned.m8n8.x1{trans}.shared.b16 {{%r20}}, [%r25];")
    for half_ in (0, 8):
        op(f"stmatrix.x4{trans} (bytes {half_}..{half_ + 7})", "u32", SHARED_ROWS +
           "add.u32 %r26, %r25, 4096;\n  "
           f"stmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 [%r26], {{%r10, %r11, %r12, %r13}};\n"
           f"  bar.warp.sync 0xffffffff;\n  ld.shared.v2.u32 {{%r20, %r21}}, [%r26+{half_}];")
op("movmatrix.trans", "u32", "movmatrix.sync.aligned.m8n8.trans.b16 %r20, %r10;\n"
   "  movmatrix.sync.aligned.m8n8.trans.b16 %r21, %r11;")

# The WMMA API's tiles, from nvcc's PTX of nvcuda::wmma code: warp w < 8
# loads A from in[2048w..], B from in[2048w+512..] and C from in[2048w+1024..]
# (leading dimensions padded by 8 elements, so a load that reads the padding
# differs), multiplies, and stores D to out[512w..]. The elements are small
# integers, so every product and sum is exact and both sides must agree bit
# for bit whatever order they add in; the fragment layout is each side's own.
WMMA = {}
for atype, ctypes, shapes in [("half", ["float", "half"], [(16, 16, 16), (32, 8, 16), (8, 32, 16)]),
                              ("__nv_bfloat16", ["float"], [(16, 16, 16), (32, 8, 16), (8, 32, 16)]),
                              ("signed char", ["int"], [(16, 16, 16), (32, 8, 16), (8, 32, 16)]),
                              ("unsigned char", ["int"], [(16, 16, 16)]),
                              ("wmma::precision::tf32", ["float"], [(16, 16, 8)])]:
    for ctype in ctypes:
        for m, n, k in shapes:
            for a_row in (True, False):
                for b_row in (True, False):
                    c_row = a_row == b_row
                    d_row = a_row
                    short = {"half": "f16", "__nv_bfloat16": "bf16", "signed char": "s8", "unsigned char": "u8",
                             "wmma::precision::tf32": "tf32"}[atype]
                    name = (f"wmma.m{m}n{n}k{k}.{short}.{ctype}.{'row' if a_row else 'col'}."
                            f"{'row' if b_row else 'col'} (C {'row' if c_row else 'col'}, D {'row' if d_row else 'col'})")
                    WMMA[name] = (atype, ctype, m, n, k, a_row, b_row, c_row, d_row)

WMMA_CU = """#include <mma.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
using namespace nvcuda;
extern "C" __global__ void k(const unsigned *in, unsigned *out) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  if (warp >= 8) return;
  const unsigned *base = in + warp * 2048;
  wmma::fragment<wmma::matrix_a, M, N, K, AT, ALAYOUT> a;
  wmma::fragment<wmma::matrix_b, M, N, K, AT, BLAYOUT> b;
  wmma::fragment<wmma::accumulator, M, N, K, CT> c;
  wmma::load_matrix_sync(a, (const AS *)base, LDA);
  wmma::load_matrix_sync(b, (const AS *)(base + 512), LDB);
  wmma::load_matrix_sync(c, (const CT *)(base + 1024), LDC, CLAYOUT);
  wmma::mma_sync(c, a, b, c);
  wmma::store_matrix_sync((CT *)(out + warp * 512), c, LDD, DLAYOUT);
}
"""


def wmma_source(spec):
    atype, ctype, m, n, k, a_row, b_row, c_row, d_row = spec
    storage = {"wmma::precision::tf32": "float"}.get(atype, atype)
    layout = lambda row: "wmma::row_major" if row else "wmma::col_major"
    mem = lambda row: "wmma::mem_row_major" if row else "wmma::mem_col_major"
    subs = {"AT": atype, "AS": storage, "CT": ctype, "ALAYOUT": layout(a_row), "BLAYOUT": layout(b_row),
            "CLAYOUT": mem(c_row), "DLAYOUT": mem(d_row), "LDA": str((k if a_row else m) + 8),
            "LDB": str((n if b_row else k) + 8), "LDC": str((n if c_row else m) + 8), "LDD": str((n if d_row else m) + 8),
            "M": str(m), "N": str(n), "K": str(k)}
    text = WMMA_CU
    for key in sorted(subs, key=len, reverse=True):
        text = text.replace(key, subs[key])
    return text


def wmma_inputs(name, spec):
    atype, ctype = spec[0], spec[1]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    words = np.zeros((8, 2048), dtype=np.uint32)
    for region, count, what in [(0, 512, atype), (512, 512, atype), (1024, 1024, ctype)]:
        if what in ("half", "__nv_bfloat16"):
            values = rng.integers(-4, 5, 2 * count).astype(np.float32)
            halves = values.astype(np.float16).view(np.uint16) if what == "half" else \
                (values.view(np.uint32) >> 16).astype(np.uint16)
            block = halves.astype(np.uint32)
            block = block[0::2] | (block[1::2] << 16)
        elif what in ("float", "wmma::precision::tf32"):
            block = rng.integers(-16 if what == "float" else -4, 17 if what == "float" else 5, count) \
                .astype(np.float32).view(np.uint32)
        elif what == "int":
            block = rng.integers(-1000, 1001, count).astype(np.int32).view(np.uint32)
        else:
            low, high = (-8, 9) if what == "signed char" else (0, 16)
            block = rng.integers(low, high, 4 * count).astype(np.int8).view(np.uint8).astype(np.uint32)
            block = block[0::4] | (block[1::4] << 8) | (block[2::4] << 16) | (block[3::4] << 24)
        for w in range(8):  # each warp's tile its own values
            words[w, region:region + count] = np.roll(block, 7 * w)
    return words.reshape(-1)


HEAD = """.version 8.5
.target sm_90
.address_size 64

.visible .entry k(.param .u64 in, .param .u64 out)
{
  .reg .pred %p<8>;
  .reg .b32 %r<32>;
  .reg .f32 %f<32>;
  .reg .b64 %rd<32>;
  .reg .f64 %fd<32>;
  .reg .b16 %h<32>;
  .shared .align 16 .b8 sm[8192];
  ld.param.u64 %rd1, [in];
  ld.param.u64 %rd2, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.u32 %r4, %r1, %r2, %r3;
  mul.wide.u32 %rd3, %r4, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.u32 {%r10, %r11, %r12, %r13}, [%rd4];
  mul.wide.u32 %rd5, %r4, 8;
  add.s64 %rd6, %rd2, %rd5;
  mov.b32 %f10, %r10;
  mov.b32 %f11, %r11;
  mov.b32 %f12, %r12;
  mov.b32 %f13, %r13;
  mov.b64 %rd10, {%r10, %r11};
  mov.b64 %rd11, {%r12, %r13};
  mov.b64 %fd10, %rd10;
  mov.b64 %fd11, %rd11;
  mov.b32 {%h10, %h11}, %r10;
  mov.b32 {%h12, %h13}, %r11;
  mov.b32 {%h14, %h15}, %r12;
  mov.b32 {%h16, %h17}, %r13;
  mov.u32 %r20, 0;
  mov.u32 %r21, 0;
  mov.b16 %h21, 0;
  BODY
  st.global.v2.u32 [%rd6], {%r20, %r21};
  ret;
}
"""

# ---------------------------------------------------------------------------
# Inputs.


def f32_words(rng, n):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0, 3.0, -0.5, 1e-45, -1e-45,
                        1.1754942e-38, 1.17549435e-38, -1.17549435e-38, 3.4028235e38, -3.4028235e38, 65504.0,
                        65520.0, 448.0, 464.0, 57344.0, 2.5, -2.5, 0.49999997, 2147483520.0, 2147483648.0,
                        4294967296.0, -2147483904.0, 1e30, 1e-30, 88.7, -87.3, 126.9, -149.5],
                       dtype=np.float32).view(np.uint32)
    pick = rng.integers(0, 6, n)
    words = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)  # raw bits
    ordinary = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32).view(np.uint32)
    subnormal = rng.integers(1, 1 << 23, n, dtype=np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    halfway = (np.floor(rng.standard_normal(n) * 8) + 0.5).astype(np.float32).view(np.uint32)
    words = np.where(pick == 0, rng.choice(special, n), words)
    words = np.where(pick == 1, ordinary, words)
    words = np.where(pick == 2, subnormal, words)
    words = np.where(pick == 3, halfway, words)
    words = np.where(pick == 4, ordinary, words)
    return words


def half_words(rng, n, kind):
    if kind == "f16":
        special = np.array([0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x3C00, 0xBC00, 0x0001, 0x8001, 0x03FF, 0x0400,
                            0x7BFF, 0xFBFF, 0x3800, 0x4000, 0x4200], dtype=np.uint32)
        ordinary = (rng.standard_normal(2 * n) * 10.0 ** rng.integers(-2, 3, 2 * n)).astype(np.float16).view(np.uint16)
        subnormal = rng.integers(1, 1 << 10, 2 * n) | (rng.integers(0, 2, 2 * n) << 15)
    else:
        special = np.array([0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x3F80, 0xBF80, 0x0001, 0x8001, 0x007F, 0x0080,
                            0x7F7F, 0xFF7F, 0x3F00, 0x4000, 0x4040], dtype=np.uint32)
        ordinary = ((rng.standard_normal(2 * n) * 10.0 ** rng.integers(-2, 3, 2 * n)).astype(np.float32)
                    .view(np.uint32) >> 16).astype(np.uint16)
        subnormal = rng.integers(1, 1 << 7, 2 * n) | (rng.integers(0, 2, 2 * n) << 15)
    pick = rng.integers(0, 5, 2 * n)
    halves = rng.integers(0, 1 << 16, 2 * n)
    halves = np.where(pick == 0, rng.choice(special, 2 * n), halves)
    halves = np.where(pick == 1, ordinary, halves)
    halves = np.where(pick == 2, subnormal, halves)
    halves = np.where(pick == 3, ordinary, halves).astype(np.uint32)
    return halves[0::2] | (halves[1::2] << 16)


def f64_words(rng, n):
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 5e-324, -5e-324, 2.2250738585072014e-308,
                        1.7976931348623157e308, 1e300, 1e-300, 2147483647.5, 9.3e18, 1.8e19, -9.3e18, 3.4028235e38,
                        3.4028236e38, 1.4e-45, 7e-46, 65504.0, 65520.0], dtype=np.float64).view(np.uint64)
    pick = rng.integers(0, 5, n)
    words = rng.integers(0, 2 ** 63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    ordinary = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 6, n)).view(np.uint64)
    subnormal = rng.integers(1, 1 << 52, n, dtype=np.uint64)
    words = np.where(pick == 0, rng.choice(special, n), words)
    words = np.where(pick == 1, ordinary, words)
    words = np.where(pick == 2, subnormal, words)
    words = np.where(pick == 3, ordinary, words)
    return words.view(np.uint32)


def u32_words(rng, n):
    special = np.array([0, 1, 2, 3, 7, 8, 15, 16, 17, 24, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 0x7FFFFFFF,
                        0x80000000, 0xFFFFFFFF, 0xFFFFFFFE, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x10000],
                       dtype=np.uint32)
    pick = rng.integers(0, 4, n)
    words = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    small = rng.integers(-40, 41, n).astype(np.int64).astype(np.uint32)
    words = np.where(pick == 0, rng.choice(special, n), words)
    words = np.where(pick == 1, small, words)
    return words


def inputs(name, kind):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    n = 4 * THREADS
    if kind == "f32":
        return f32_words(rng, n)
    if kind in ("f16", "bf16"):
        return half_words(rng, n, kind)
    if kind == "f64":
        return f64_words(rng, n // 2)
    return u32_words(rng, n)


def file_name(name):
    return "".join(c if c.isalnum() or c in "._+-" else "_" for c in name)


def gen(directory):
    os.makedirs(directory, exist_ok=True)
    kept = []
    ptxas = os.environ.get("PTXAS", "ptxas")
    for name, (kind, body, _) in OPS.items():
        base = os.path.join(directory, file_name(name))
        with open(base + ".ptx", "w") as f:
            f.write(HEAD.replace("BODY", body))
        check = subprocess.run([ptxas, "-arch=sm_90", base + ".ptx", "-o", os.devnull], capture_output=True, text=True)
        if check.returncode != 0:
            print(f"dropped {name}: {check.stderr.strip().splitlines()[0] if check.stderr.strip() else 'ptxas'}",
                  file=sys.stderr)
            os.remove(base + ".ptx")
            continue
        inputs(name, kind).astype("<u4").tofile(base + ".in")
        kept.append(name)
    nvcc = os.environ.get("NVCC", "nvcc")
    for name, spec in WMMA.items():
        base = os.path.join(directory, file_name(name))
        with open(base + ".cu", "w") as f:
            f.write(wmma_source(spec))
        built = subprocess.run([nvcc, "-arch=sm_90", "-O3", "-ptx", base + ".cu", "-o", base + ".ptx"],
                               capture_output=True, text=True)
        os.remove(base + ".cu")
        if built.returncode != 0:
            print(f"dropped {name}: {built.stderr.strip()[:200]}", file=sys.stderr)
            continue
        wmma_inputs(name, spec).astype("<u4").tofile(base + ".in")
        kept.append(name)
    with open(os.path.join(directory, "ops.json"), "w") as f:
        json.dump(kept, f, indent=0)
    print(f"{len(kept)} of {len(OPS) + len(WMMA)} ops written to {directory}")


def run(ptxforge, directory, executor, only):
    names = json.load(open(os.path.join(directory, "ops.json")))
    for name in names:
        if only and name not in only:
            continue
        base = os.path.join(directory, file_name(name))
        cmd = [ptxforge, "run", base + ".ptx", "--kernel", "k", "--grid", str(THREADS // BLOCK), "--block", str(BLOCK),
               "--executor", executor, "--format", "json", "--buffer", f"in=u32:{4 * THREADS}:@{base}.in",
               "--buffer", f"out=u32:{2 * THREADS}", "--dump", f"out={base}.{executor}"]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        try:
            doc = json.loads(result.stdout)
        except json.JSONDecodeError:
            doc = {"ok": False, "error": {"message": (result.stdout + result.stderr)[-400:]}}
        if not doc.get("ok"):
            with open(base + f".{executor}.err", "w") as f:
                json.dump(doc, f)
            if os.path.exists(base + f".{executor}"):
                os.remove(base + f".{executor}")


# ---------------------------------------------------------------------------
# Comparison.


def as_float(words, kind):
    if kind == "f32":
        return words.view(np.float32).astype(np.float64)
    if kind == "f16":
        return (words & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)
    if kind == "bf16":
        return ((words & 0xFFFF) << 16).astype(np.uint32).view(np.float32).astype(np.float64)
    raise ValueError(kind)


def same_bits(kind_out, a, b):
    """Bitwise equality of (n, 2) word pairs, any NaN equal to any NaN of the same width."""
    equal = np.all(a == b, axis=1)
    f32nan = lambda w: ((w & 0x7F800000) == 0x7F800000) & ((w & 0x007FFFFF) != 0)
    f16nan = lambda w: ((w & 0x7C00) == 0x7C00) & ((w & 0x03FF) != 0)
    bf16nan = lambda w: ((w & 0x7F80) == 0x7F80) & ((w & 0x007F) != 0)
    for test in (f32nan, ):
        equal |= test(a[:, 0]) & test(b[:, 0]) & (a[:, 1] == b[:, 1])
    lo16 = lambda w: w & 0xFFFF
    hi16 = lambda w: w >> 16
    for test in (f16nan, bf16nan):
        lo = (lo16(a[:, 0]) == lo16(b[:, 0])) | (test(lo16(a[:, 0])) & test(lo16(b[:, 0])))
        hi = (hi16(a[:, 0]) == hi16(b[:, 0])) | (test(hi16(a[:, 0])) & test(hi16(b[:, 0])))
        equal |= lo & hi & (a[:, 1] == b[:, 1])
    f64w = lambda w: w[:, 0].astype(np.uint64) | (w[:, 1].astype(np.uint64) << np.uint64(32))
    da, db = f64w(a), f64w(b)
    f64nan = lambda w: ((w & np.uint64(0x7FF0000000000000)) == np.uint64(0x7FF0000000000000)) & (
        (w & np.uint64(0x000FFFFFFFFFFFFF)) != 0)
    equal |= f64nan(da) & f64nan(db)
    return equal


def within(tol, gpu, emu, inputs_words):
    kind, bound = tol
    g, e = gpu[:, 0], emu[:, 0]
    if kind in ("f32", "rel", "abs", "abs-or-rel"):
        gv, ev = as_float(g, "f32"), as_float(e, "f32")
    elif kind in ("f16", "bf16"):
        gv, ev = as_float(g, kind), as_float(e, kind)
    else:  # f64 results
        gv = (g.astype(np.uint64) | (gpu[:, 1].astype(np.uint64) << np.uint64(32))).view(np.float64)
        ev = (e.astype(np.uint64) | (emu[:, 1].astype(np.uint64) << np.uint64(32))).view(np.float64)
    special = ~np.isfinite(gv) | ~np.isfinite(ev)
    if kind not in ("abs", "abs-or-rel"):  # an absolute bound holds at zero too
        special |= (gv == 0) | (ev == 0)
    ok = np.where(special, (gv == ev) | (np.isnan(gv) & np.isnan(ev)), False)
    diff = np.abs(gv - ev)
    if kind == "f32":
        ulp = np.spacing(np.abs(gv).astype(np.float32)).astype(np.float64)
        ok |= ~special & (diff <= 2 * bound * ulp + 1e-45)
    elif kind in ("f16", "bf16"):
        ulp = np.spacing(np.abs(gv).astype(np.float16)).astype(np.float64) if kind == "f16" else \
            np.abs(gv) * 2.0 ** -7
        ok |= ~special & (diff <= 2 * bound * ulp)
    elif kind in ("rel", "rel-f64", "rel-f64-hi"):
        ok |= ~special & (diff <= 2 * bound * np.abs(gv))
    elif kind == "abs":
        ok |= ~special & (diff <= 2 * bound)
    elif kind == "abs-or-rel":
        ok |= ~special & ((diff <= 2 * bound) | (diff <= 2 * bound * np.abs(gv)))
    return ok


def compare(directory, json_path):
    names = json.load(open(os.path.join(directory, "ops.json")))
    rows = []
    for name in names:
        kind, _, tol = OPS[name] if name in OPS else ("wmma", None, None)
        base = os.path.join(directory, file_name(name))
        row = {"op": name, "inputs": kind, "tolerance": tol}
        missing = [ex for ex in ("gpu", "emu") if not os.path.exists(f"{base}.{ex}")]
        if missing:
            row["status"] = "no-run"
            for ex in missing:
                err = f"{base}.{ex}.err"
                if os.path.exists(err):
                    doc = json.load(open(err))
                    message = (doc.get("error") or {}).get("message") or json.dumps(doc.get("findings"))[:300]
                    row[f"{ex}_error"] = message[:300]
            rows.append(row)
            continue
        gpu = np.fromfile(f"{base}.gpu", dtype="<u4").reshape(-1, 2)
        emu = np.fromfile(f"{base}.emu", dtype="<u4").reshape(-1, 2)
        words = np.fromfile(f"{base}.in", dtype="<u4").reshape(-1, 4)
        ok = same_bits(kind, gpu, emu)
        if tol is not None:
            ok |= within(tol, gpu, emu, words)
        bad = np.nonzero(~ok)[0]
        row["threads"] = int(len(ok))
        row["differ"] = int(len(bad))
        row["status"] = "agree" if len(bad) == 0 else "DIFFER"
        row["examples"] = [{"thread": int(t), "in": [f"{w:#010x}" for w in words[t]],
                            "gpu": [f"{w:#010x}" for w in gpu[t]], "emu": [f"{w:#010x}" for w in emu[t]]}
                           for t in bad[:6]]
        rows.append(row)
    agree = sum(r["status"] == "agree" for r in rows)
    print(f"{agree} of {len(rows)} ops agree on {THREADS} threads each")
    for r in rows:
        if r["status"] == "agree":
            continue
        print(f"\n{r['op']} ({r['inputs']}): {r['status']}", end="")
        if r["status"] == "DIFFER":
            print(f", {r['differ']} of {r['threads']} threads")
            for x in r["examples"]:
                print(f"  t{x['thread']}: in {' '.join(x['in'])}  gpu {' '.join(x['gpu'])}  emu {' '.join(x['emu'])}")
        else:
            print()
            for ex in ("gpu", "emu"):
                if f"{ex}_error" in r:
                    print(f"  {ex}: {r[ex + '_error']}")
    if json_path:
        with open(json_path, "w") as f:
            json.dump(rows, f, indent=1)


def main(argv):
    if len(argv) >= 2 and argv[0] == "gen":
        gen(argv[1])
    elif len(argv) >= 4 and argv[0] == "run":
        run(argv[1], argv[2], argv[3], set(argv[4:]))
    elif len(argv) >= 2 and argv[0] == "compare":
        compare(argv[1], argv[3] if len(argv) >= 4 and argv[2] == "--json" else None)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# Writes tests/hopper/bf16_gemm_wgmma.ptx, a bf16_gemm kernel written by hand for sm_90a:
# the PTX below is the kernel; Python only repeats what PTX cannot loop over (the 128
# accumulator registers of each wgmma, their zeroing and the unrolled epilogue stores).
#   python3 tests/hopper/gen_bf16_gemm_wgmma.py > tests/hopper/bf16_gemm_wgmma.ptx
# With --plant NAME it writes the kernel with one synchronization step removed (PLANTS).
import sys

ACC = ", ".join(f"%d{i}" for i in range(128))
STAGES = 4
A_STAGE = 128 * 128          # 128 rows x 64 bf16
B_STAGE = 256 * 128          # 256 rows x 64 bf16
SMEM = STAGES * (A_STAGE + B_STAGE) + 1024
TX = A_STAGE + B_STAGE

out = []
w = out.append
w(f"""// bf16_gemm on sm_90a: C (f32, M x N) = A (bf16, M x K) * B^T (B bf16, N x K, K-major),
// written by hand for Hopper's copy engine and warpgroup tensor cores
// (tests/hopper/gen_bf16_gemm_wgmma.py writes this file: it repeats the register lists
// and the unrolled stores).
//
// One CTA computes a 128 x 256 tile of C with three warpgroups (384 threads):
//  - warpgroup 0 is the producer: thread 0 streams 64-deep K steps of A (one 64 x 128
//    box of a_map) and B (two boxes of b_map, rows n0 and n0 + 128) with
//    cp.async.bulk.tensor.2d into a {STAGES}-stage ring of 128B-swizzled shared buffers,
//    each stage guarded by a "full" mbarrier (the copy engine's {TX} bytes) and an
//    "empty" mbarrier (one arrival from each of the 8 consumer warps);
//  - warpgroups 1 and 2 are consumers, rows 0-63 and 64-127 of the tile: per K step
//    four wgmma.mma_async.m64n256k16 (bf16 x bf16 -> f32, both operands from K-major
//    128B-swizzle descriptors), 128 f32 accumulators per thread; a stage is released
//    once wgmma.wait_group 1 has retired the step that read it, so the copies run up
//    to three steps ahead of the MMAs.
// CTAs are numbered in groups of 8 tile rows (the 8 M tiles of a group are consecutive
// CTAs for each N tile), so that the CTAs resident at once share their A and B panels
// in L2 instead of each wave streaming all of B.
// setmaxnreg moves registers from the producer (40) to the consumers (232).
// The epilogue stores the accumulators straight from registers: 8-byte vector stores
// when the whole tile lies inside C and N is even, bounds-checked scalar stores on the
// edges. The tensor maps' zero fill covers ragged M, N and K (a K step past K reads
// zeros), so the main loop has no bounds checks.
//
// Descriptor (PTX ISA "Matrix Descriptor Format"): bits 0-13 start address >> 4,
// 16-29 leading byte offset >> 4 (1: unused for swizzled K-major layouts), 32-45
// stride byte offset >> 4 (1024 bytes between 8-row groups: 64), 62-63 swizzle mode
// (1 = 128B). The k16 slice j of a 64-deep stage starts 32 * j bytes into each
// 128-byte row: the swizzle is applied to the absolute address, as TMA wrote it.
//
// @ptxforge block=(384,1,1) grid=(ceildiv(N,256),ceildiv(M,128),1) smem={SMEM}

.version 8.0
.target sm_90a
.address_size 64

.extern .shared .align 1024 .b8 dynamic_smem[];

.visible .entry bf16_gemm(
\t.param .u64 A,
\t.param .u64 B,
\t.param .u64 C,
\t.param .align 64 .b8 a_map[128],
\t.param .align 64 .b8 b_map[128],
\t.param .u32 M,
\t.param .u32 N,
\t.param .u32 K
)
.maxntid 384, 1, 1
.minnctapersm 1
{{
\t.reg .pred %p<16>;
\t.reg .pred %q<4>;
\t.reg .b32 %r<64>;
\t.reg .b64 %rd<32>;
\t.reg .f32 %d<128>;
\t.shared .align 8 .b64 full_bar[{STAGES}];
\t.shared .align 8 .b64 empty_bar[{STAGES}];

\tmov.u32 %r0, %tid.x;
\tshr.u32 %r1, %r0, 7;                  // warpgroup
\t// Tile of this CTA: linear id L = ctaid.y * nctaid.x + ctaid.x; groups of 8 tile rows
\t// (fewer in the last), column-major inside a group.
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r40, %ctaid.y;
\tmov.u32 %r41, %nctaid.x;
\tmov.u32 %r42, %nctaid.y;
\tmad.lo.u32 %r43, %r40, %r41, %r2;     // L
\tshl.b32 %r44, %r41, 3;                // CTAs per group
\tdiv.u32 %r45, %r43, %r44;             // group
\trem.u32 %r46, %r43, %r44;             // index in the group
\tshl.b32 %r47, %r45, 3;                // first tile row of the group
\tsub.u32 %r48, %r42, %r47;
\tmin.u32 %r48, %r48, 8;                // tile rows in the group
\trem.u32 %r49, %r46, %r48;
\tadd.u32 %r49, %r49, %r47;             // tile row
\tdiv.u32 %r50, %r46, %r48;             // tile column
\tshl.b32 %r3, %r50, 8;                 // n0
\tshl.b32 %r4, %r49, 7;                 // m0
\tld.param.u32 %r5, [M];
\tld.param.u32 %r6, [N];
\tld.param.u32 %r7, [K];
\tadd.u32 %r8, %r7, 63;
\tshr.u32 %r8, %r8, 6;                  // K steps (K >= 8: at least one)
\t// The 128B swizzle repeats every 1024 bytes: the ring starts on a 1024-byte boundary.
\tmov.u32 %r9, dynamic_smem;
\tadd.u32 %r9, %r9, 1023;
\tand.b32 %r9, %r9, -1024;              // A stages
\tadd.u32 %r10, %r9, {STAGES * A_STAGE};             // B stages
\tmov.u32 %r11, full_bar;
\tmov.u32 %r12, empty_bar;
\tsetp.ne.u32 %p0, %r0, 0;
\t@%p0 bra INIT_DONE;""")
for s in range(STAGES):
    w(f"\tmbarrier.init.shared::cta.b64 [%r11+{8*s}], 1;")
for s in range(STAGES):
    w(f"\tmbarrier.init.shared::cta.b64 [%r12+{8*s}], 8;")
w(f"""\t// The initialized barriers must be visible to the copy engine.
\tfence.proxy.async.shared::cta;
INIT_DONE:
\tbar.sync 0;
\tsetp.ne.u32 %p1, %r1, 0;
\t@%p1 bra CONSUMER;

\t// ---- producer warpgroup: thread 0 issues every copy
\tsetmaxnreg.dec.sync.aligned.u32 40;
\t@%p0 bra EXIT;
\tmov.u64 %rd0, a_map;
\tcvta.param.u64 %rd0, %rd0;
\tmov.u64 %rd1, b_map;
\tcvta.param.u64 %rd1, %rd1;
\tadd.u32 %r13, %r3, 128;               // second B box: rows n0 + 128 ...
\tmov.u32 %r14, 0;                      // K step
PRODUCE:
\tand.b32 %r15, %r14, {STAGES - 1};     // stage
\tshr.u32 %r16, %r14, {STAGES.bit_length() - 1};
\tand.b32 %r16, %r16, 1;
\txor.b32 %r16, %r16, 1;                // parity of the phase that frees the stage (the first pass waits for none)
\tshl.b32 %r17, %r15, 3;
\tadd.u32 %r18, %r12, %r17;             // empty[stage]
\tadd.u32 %r19, %r11, %r17;             // full[stage]
WAIT_EMPTY:
\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r18], %r16;
\t@!%p2 bra WAIT_EMPTY;
\tmbarrier.arrive.expect_tx.shared::cta.b64 _, [%r19], {TX};
\tmul.lo.u32 %r20, %r15, {A_STAGE};
\tadd.u32 %r20, %r9, %r20;
\tmul.lo.u32 %r21, %r15, {B_STAGE};
\tadd.u32 %r21, %r10, %r21;
\tadd.u32 %r22, %r21, {B_STAGE // 2};
\tshl.b32 %r23, %r14, 6;                // k0
\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r20], [%rd0, {{%r23, %r4}}], [%r19];
\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r21], [%rd1, {{%r23, %r3}}], [%r19];
\tcp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r22], [%rd1, {{%r23, %r13}}], [%r19];
\tadd.u32 %r14, %r14, 1;
\tsetp.lt.u32 %p3, %r14, %r8;
\t@%p3 bra PRODUCE;
\tbra.uni EXIT;

\t// ---- consumer warpgroups 1 and 2
CONSUMER:
\tsetmaxnreg.inc.sync.aligned.u32 232;
\tsub.u32 %r24, %r1, 1;                 // consumer 0: rows 0-63, 1: rows 64-127
\tshl.b32 %r25, %r24, 13;               // its A rows start 64 x 128 bytes into a stage
\tand.b32 %r26, %r0, 31;                // lane
\tsetp.eq.u32 %p5, %r26, 0;             // lane 0 releases stages for its warp
\tsetp.eq.u32 %p4, %r0, %r0;            // scale-d: accumulate""")
for i in range(128):
    w(f"\tmov.f32 %d{i}, 0f00000000;")
w(f"""\tmov.b64 %rd2, 0x4000004000010000;     // 128B swizzle, SBO 1024, LBO 16
\tmov.u32 %r14, 0;
CONSUME:
\tand.b32 %r15, %r14, {STAGES - 1};
\tshr.u32 %r16, %r14, {STAGES.bit_length() - 1};
\tand.b32 %r16, %r16, 1;
\tshl.b32 %r17, %r15, 3;
\tadd.u32 %r19, %r11, %r17;
WAIT_FULL:
\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r19], %r16;
\t@!%p2 bra WAIT_FULL;
\tmul.lo.u32 %r20, %r15, {A_STAGE};
\tadd.u32 %r20, %r9, %r20;
\tadd.u32 %r20, %r20, %r25;
\tmul.lo.u32 %r21, %r15, {B_STAGE};
\tadd.u32 %r21, %r10, %r21;
\tshr.u32 %r20, %r20, 4;
\tshr.u32 %r21, %r21, 4;
\tcvt.u64.u32 %rd3, %r20;
\tor.b64 %rd3, %rd3, %rd2;               // A descriptor
\tcvt.u64.u32 %rd4, %r21;
\tor.b64 %rd4, %rd4, %rd2;               // B descriptor
\twgmma.fence.sync.aligned;""")
for j in range(4):
    if j:
        w(f"\tadd.s64 %rd3, %rd3, 2;                 // next k16 slice: 32 bytes on")
        w(f"\tadd.s64 %rd4, %rd4, 2;")
    w(f"\twgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{{ACC}}}, %rd3, %rd4, %p4, 1, 1, 0, 0;")
w(f"""\twgmma.commit_group.sync.aligned;
\t// The step before this one has retired: its stage goes back to the producer.
\twgmma.wait_group.sync.aligned 1;
\tsetp.ne.and.u32 %p6, %r14, 0, %p5;
\tadd.u32 %r27, %r14, {STAGES - 1};
\tand.b32 %r27, %r27, {STAGES - 1};
\tshl.b32 %r27, %r27, 3;
\tadd.u32 %r27, %r12, %r27;
\t@%p6 mbarrier.arrive.shared::cta.b64 _, [%r27];
\tadd.u32 %r14, %r14, 1;
\tsetp.lt.u32 %p3, %r14, %r8;
\t@%p3 bra CONSUME;
\twgmma.wait_group.sync.aligned 0;

\t// ---- epilogue: thread (warp w, lane l) holds rows 16w + l/4 and 16w + l/4 + 8 of its
\t// 64-row half, columns 8i + 2(l%4) + {{0, 1}} in registers 4i + {{0, 1}} and 4i + {{2, 3}}.
\tshr.u32 %r28, %r0, 5;
\tand.b32 %r28, %r28, 3;                // warp in the warpgroup
\tshl.b32 %r29, %r24, 6;
\tadd.u32 %r29, %r29, %r4;
\tshl.b32 %r30, %r28, 4;
\tadd.u32 %r29, %r29, %r30;
\tshr.u32 %r30, %r26, 2;
\tadd.u32 %r29, %r29, %r30;             // row
\tadd.u32 %r31, %r29, 8;                // row + 8
\tand.b32 %r32, %r26, 3;
\tshl.b32 %r32, %r32, 1;
\tadd.u32 %r32, %r32, %r3;              // first column
\tld.param.u64 %rd5, [C];
\tcvta.to.global.u64 %rd5, %rd5;
\tmul.wide.u32 %rd6, %r29, %r6;
\tcvt.u64.u32 %rd7, %r32;
\tadd.s64 %rd6, %rd6, %rd7;
\tshl.b64 %rd6, %rd6, 2;
\tadd.s64 %rd6, %rd5, %rd6;             // &C[row][column]
\tmul.wide.u32 %rd8, %r6, 32;
\tadd.s64 %rd8, %rd6, %rd8;             // &C[row + 8][column]
\t// The whole tile inside C and rows of an even length: unchecked 8-byte stores.
\tadd.u32 %r33, %r4, 128;
\tsetp.le.u32 %p7, %r33, %r5;
\tadd.u32 %r33, %r3, 256;
\tsetp.le.and.u32 %p7, %r33, %r6, %p7;
\tand.b32 %r33, %r6, 1;
\tsetp.eq.and.u32 %p7, %r33, 0, %p7;
\t@!%p7 bra EDGE;""")
for i in range(32):
    w(f"\tst.global.v2.f32 [%rd6+{32*i}], {{%d{4*i}, %d{4*i+1}}};")
    w(f"\tst.global.v2.f32 [%rd8+{32*i}], {{%d{4*i+2}, %d{4*i+3}}};")
w("""\tbra.uni EXIT;
EDGE:
\tsetp.lt.u32 %p8, %r29, %r5;           // row inside
\tsetp.lt.u32 %p9, %r31, %r5;           // row + 8 inside
\tsub.s32 %r34, %r6, %r32;              // columns left from the first: N - column""")
for i in range(32):
    w(f"\tsetp.gt.and.s32 %q0, %r34, {8*i}, %p8;")
    w(f"\tsetp.gt.and.s32 %q1, %r34, {8*i+1}, %p8;")
    w(f"\tsetp.gt.and.s32 %q2, %r34, {8*i}, %p9;")
    w(f"\tsetp.gt.and.s32 %q3, %r34, {8*i+1}, %p9;")
    w(f"\t@%q0 st.global.f32 [%rd6+{32*i}], %d{4*i};")
    w(f"\t@%q1 st.global.f32 [%rd6+{32*i+4}], %d{4*i+1};")
    w(f"\t@%q2 st.global.f32 [%rd8+{32*i}], %d{4*i+2};")
    w(f"\t@%q3 st.global.f32 [%rd8+{32*i+4}], %d{4*i+3};")
w("""EXIT:
\tret;
}""")
text = "\n".join(out) + "\n"

# Planted hazards (tests/hopper/CMakeLists.txt): the kernel with one synchronization step
# removed, which the emulator must report at the line that depends on it.
PLANTS = {
    # The consumers read a stage without waiting for its copies: racecheck at the wgmma.
    "no-full-wait": ["WAIT_FULL:\n\tmbarrier.try_wait.parity.shared::cta.b64 %p2, [%r19], %r16;\n\t@!%p2 bra WAIT_FULL;\n"],
    # The accumulators are stored with the last wgmmas still pending: racecheck at the store.
    "no-wgmma-wait": ["\twgmma.wait_group.sync.aligned 0;\n"],
    # No fence after the mbarrier inits: the copy engine may not see them. A warning at the
    # first init (such kernels often run), the verdict unchanged.
    "no-init-fence": ["\tfence.proxy.async.shared::cta;\n"],
    # The consumers release the previous stage with its wgmmas never retired: the producer's
    # copy into that stage is reported (a shape of more K steps than stages).
    "early-release": ["\twgmma.wait_group.sync.aligned 1;\n"],
    # The consumers release the previous stage, then retire its wgmmas: the retirement is
    # not ordered before the producer's copy, whichever order the emulator ran them in.
    "release-before-wait": [("\twgmma.wait_group.sync.aligned 1;\n", ""),
                            ("\t@%p6 mbarrier.arrive.shared::cta.b64 _, [%r27];\n",
                             "\t@%p6 mbarrier.arrive.shared::cta.b64 _, [%r27];\n\twgmma.wait_group.sync.aligned 1;\n")],
}
if len(sys.argv) == 3 and sys.argv[1] == "--plant" and sys.argv[2] in PLANTS:
    for change in PLANTS[sys.argv[2]]:
        removed, added = change if isinstance(change, tuple) else (change, "")
        assert text.count(removed) == 1, removed
        text = text.replace(removed, added)
    text = f"// planted: {sys.argv[2]}\n" + text
elif len(sys.argv) != 1:
    sys.exit(f"usage: {sys.argv[0]} [--plant {'|'.join(PLANTS)}]")
sys.stdout.write(text)

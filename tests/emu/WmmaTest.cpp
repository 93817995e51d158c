// wmma (the WMMA API's tiles) on the emulator, through the Executor: a tile
// loaded, multiplied and stored gives the host's product in every shape and
// layout, the layout says how the tile is stored, integer and tf32 tiles, f16
// accumulators, and a partial warp is a synccheck finding; and movmatrix. (nvcc's own PTX of
// nvcuda::wmma code is checked by the same rules: 24 variants of a WMMA GEMM,
// f16 and bf16, three shapes, B and C in both layouts, were exact on
// 2026-12-05; see ExecWmma.cpp.)
#include "EmuHarness.h"
#include "emu/Arith.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace ptxforge::emu {
namespace {

/// The f16 bits of a small integer (|v| <= 15), written out here.
uint16_t halfOf(int v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  const int magnitude = std::abs(v);
  const int exponent = std::bit_width(static_cast<unsigned>(magnitude)) - 1;
  const int mantissa = ((magnitude << 10) >> exponent) & 0x3ff;
  return static_cast<uint16_t>(sign | ((exponent + 15) << 10) | mantissa);
}

/// A tile of small random integers, row-major.
std::vector<int> randomTile(unsigned rows, unsigned cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(-4, 4);
  std::vector<int> tile(size_t(rows) * cols);
  for (int &v : tile) v = pick(rng);
  return tile;
}

/// `tile` (rows x cols, row-major) as 16-bit halves in the words of `in`
/// from word `at`, stored row-major or, with `columnMajor`, column-major.
void putHalves(std::vector<uint32_t> &in, size_t at, const std::vector<int> &tile, unsigned rows, unsigned cols,
               bool columnMajor) {
  for (unsigned r = 0; r < rows; ++r)
    for (unsigned c = 0; c < cols; ++c) {
      const size_t element = columnMajor ? size_t(c) * rows + r : size_t(r) * cols + c;
      uint32_t &word = in[at + element / 2];
      const unsigned shift = 16 * (element % 2);
      word = (word & ~(0xffffu << shift)) | (uint32_t(halfOf(tile[size_t(r) * cols + c])) << shift);
    }
}

/// A * B (+ c0 everywhere), row-major m x n.
std::vector<float> product(const std::vector<int> &a, const std::vector<int> &b, unsigned m, unsigned n, unsigned k,
                           float c0 = 0) {
  std::vector<float> d(size_t(m) * n, c0);
  for (unsigned r = 0; r < m; ++r)
    for (unsigned c = 0; c < n; ++c)
      for (unsigned kk = 0; kk < k; ++kk) d[size_t(r) * n + c] += float(a[size_t(r) * k + kk] * b[size_t(kk) * n + c]);
  return d;
}

std::string regs(const char *prefix, int first, int count) {
  std::string out = "{";
  for (int i = 0; i < count; ++i) out += fmt::format("{}{}{}", i ? ", " : "", prefix, first + i);
  return out + "}";
}

/// A kernel body: A from in[0..], B from in[bOffset bytes..], C = c0, D stored to out.
std::string f16Body(unsigned m, unsigned n, unsigned k, const char *aLoad, const char *bLoad, const char *mmaLayouts,
                    const char *store, unsigned bOffset, const char *c0 = "0f00000000") {
  const std::string shape = fmt::format("m{}n{}k{}", m, n, k);
  std::string body = "  .reg .b32 %a<8>;\n  .reg .b32 %b<8>;\n  .reg .f32 %c<8>;\n  .reg .f32 %d<8>;\n";
  for (int i = 0; i < 8; ++i) body += fmt::format("  mov.f32 %c{}, {};\n", i, c0);
  body += fmt::format("  wmma.load.a.sync.aligned.{}.{}.global.f16 {}, [%rd11];\n", aLoad, shape, regs("%a", 0, 8));
  body += fmt::format("  wmma.load.b.sync.aligned.{}.{}.global.f16 {}, [%rd11+{}];\n", bLoad, shape, regs("%b", 0, 8),
                      bOffset);
  body += fmt::format("  wmma.mma.sync.aligned.{}.{}.f32.f32 {}, {}, {}, {};\n", mmaLayouts, shape, regs("%d", 0, 8),
                      regs("%a", 0, 8), regs("%b", 0, 8), regs("%c", 0, 8));
  body += fmt::format("  wmma.store.d.sync.aligned.{}.{}.global.f32 [%rd10], {};\n  ret;", store, shape,
                      regs("%d", 0, 8));
  return body;
}

TEST_F(EmuTest, WmmaF16TilesGiveTheHostProductInEveryShapeAndLayout) {
  struct Shape {
    unsigned m, n, k;
  };
  for (Shape s : {Shape{16, 16, 16}, Shape{32, 8, 16}, Shape{8, 32, 16}})
    for (bool aCol : {false, true})
      for (bool bCol : {false, true})
        for (bool dCol : {false, true}) {
          SCOPED_TRACE(fmt::format("m{}n{}k{} A {} B {} D {}", s.m, s.n, s.k, aCol ? "col" : "row", bCol ? "col" : "row",
                                   dCol ? "col" : "row"));
          const std::vector<int> a = randomTile(s.m, s.k, 1), b = randomTile(s.k, s.n, 2);
          const unsigned bOffset = s.m * s.k * 2;
          std::vector<uint32_t> in((s.m * s.k + s.k * s.n) / 2);
          putHalves(in, 0, a, s.m, s.k, aCol);
          putHalves(in, bOffset / 4, b, s.k, s.n, bCol);
          const std::string layouts = fmt::format("{}.{}", aCol ? "col" : "row", bCol ? "col" : "row");
          Outcome o = run(kernel(f16Body(s.m, s.n, s.k, aCol ? "col" : "row", bCol ? "col" : "row", layouts.c_str(),
                                         dCol ? "col" : "row", bOffset, "0f3F000000")),
                          1, 32, s.m * s.n, in);
          ASSERT_TRUE(o.status) << o.status.error().message;
          EXPECT_TRUE(o.findings.empty());
          const std::vector<float> want = product(a, b, s.m, s.n, s.k, 0.5f);
          for (unsigned r = 0; r < s.m; ++r)
            for (unsigned c = 0; c < s.n; ++c) {
              const uint32_t got = o.out[dCol ? size_t(c) * s.m + r : size_t(r) * s.n + c];
              EXPECT_EQ(std::bit_cast<float>(got), want[size_t(r) * s.n + c]) << "D[" << r << "][" << c << "]";
            }
        }
}

TEST_F(EmuTest, WmmaLayoutSaysHowTheTileIsStored) {
  // A stored row-major but loaded and multiplied as .col: the tile is A's
  // transpose, so D = A^T B (a square tile).
  const std::vector<int> a = randomTile(16, 16, 3), b = randomTile(16, 16, 4);
  std::vector<uint32_t> in(256);
  putHalves(in, 0, a, 16, 16, false);
  putHalves(in, 128, b, 16, 16, false);
  Outcome o = run(kernel(f16Body(16, 16, 16, "col", "row", "col.row", "row", 512)), 1, 32, 256, in);
  ASSERT_TRUE(o.status) << o.status.error().message;
  std::vector<int> aT(256);
  for (unsigned r = 0; r < 16; ++r)
    for (unsigned c = 0; c < 16; ++c) aT[c * 16 + r] = a[r * 16 + c];
  const std::vector<float> want = product(aT, b, 16, 16, 16);
  for (unsigned i = 0; i < 256; ++i) EXPECT_EQ(std::bit_cast<float>(o.out[i]), want[i]) << i;
}

TEST_F(EmuTest, WmmaIntegerTf32AndHalfAccumulatorTiles) {
  // s8 m16n16k16 with s32 C = 7; tf32 m16n16k8; f16 inputs with f16 C and D.
  const std::vector<int> a = randomTile(16, 16, 5), b = randomTile(16, 16, 6);
  {
    std::vector<uint32_t> in(128);
    for (unsigned i = 0; i < 256; ++i) {
      in[i / 4] |= uint32_t(uint8_t(int8_t(a[i]))) << (8 * (i % 4));
      in[64 + i / 4] |= uint32_t(uint8_t(int8_t(b[i]))) << (8 * (i % 4));
    }
    std::string body = "  .reg .b32 %a<2>;\n  .reg .b32 %b<2>;\n  .reg .b32 %c<8>;\n  .reg .b32 %d<8>;\n";
    for (int i = 0; i < 8; ++i) body += fmt::format("  mov.b32 %c{}, 7;\n", i);
    body += "  wmma.load.a.sync.aligned.row.m16n16k16.global.s8 {%a0, %a1}, [%rd11];\n"
            "  wmma.load.b.sync.aligned.row.m16n16k16.global.s8 {%b0, %b1}, [%rd11+256];\n"
            "  wmma.mma.sync.aligned.row.row.m16n16k16.s32.s8.s8.s32 " + regs("%d", 0, 8) +
            ", {%a0, %a1}, {%b0, %b1}, " + regs("%c", 0, 8) + ";\n"
            "  wmma.store.d.sync.aligned.row.m16n16k16.global.s32 [%rd10], " + regs("%d", 0, 8) + ";\n  ret;";
    Outcome o = run(kernel(body), 1, 32, 256, in);
    ASSERT_TRUE(o.status) << o.status.error().message;
    const std::vector<float> want = product(a, b, 16, 16, 16, 7);
    for (unsigned i = 0; i < 256; ++i) EXPECT_EQ(int32_t(o.out[i]), int32_t(want[i])) << "s8 " << i;
  }
  {
    const std::vector<int> ak = randomTile(16, 8, 7), bk = randomTile(8, 16, 8);
    std::vector<uint32_t> in(256);
    for (unsigned i = 0; i < 128; ++i) {
      in[i] = std::bit_cast<uint32_t>(float(ak[i]));
      in[128 + i] = std::bit_cast<uint32_t>(float(bk[i]));
    }
    std::string body = "  .reg .b32 %a<4>;\n  .reg .b32 %b<4>;\n  .reg .f32 %c<8>;\n  .reg .f32 %d<8>;\n";
    for (int i = 0; i < 8; ++i) body += fmt::format("  mov.f32 %c{}, 0f00000000;\n", i);
    body += "  wmma.load.a.sync.aligned.row.m16n16k8.global.tf32 {%a0, %a1, %a2, %a3}, [%rd11];\n"
            "  wmma.load.b.sync.aligned.row.m16n16k8.global.tf32 {%b0, %b1, %b2, %b3}, [%rd11+512];\n"
            "  wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32 " + regs("%d", 0, 8) +
            ", {%a0, %a1, %a2, %a3}, {%b0, %b1, %b2, %b3}, " + regs("%c", 0, 8) + ";\n"
            "  wmma.store.d.sync.aligned.row.m16n16k8.global.f32 [%rd10], " + regs("%d", 0, 8) + ";\n  ret;";
    Outcome o = run(kernel(body), 1, 32, 256, in);
    ASSERT_TRUE(o.status) << o.status.error().message;
    const std::vector<float> want = product(ak, bk, 16, 16, 8);
    for (unsigned i = 0; i < 256; ++i) EXPECT_EQ(std::bit_cast<float>(o.out[i]), want[i]) << "tf32 " << i;
  }
  {
    std::vector<uint32_t> in(256);
    putHalves(in, 0, a, 16, 16, false);
    putHalves(in, 128, b, 16, 16, false);
    std::string body = "  .reg .b32 %a<8>;\n  .reg .b32 %b<8>;\n  .reg .b32 %c<4>;\n  .reg .b32 %d<4>;\n";
    for (int i = 0; i < 4; ++i) body += fmt::format("  mov.b32 %c{}, 0;\n", i);
    body += "  wmma.load.a.sync.aligned.row.m16n16k16.global.f16 " + regs("%a", 0, 8) + ", [%rd11];\n"
            "  wmma.load.b.sync.aligned.row.m16n16k16.global.f16 " + regs("%b", 0, 8) + ", [%rd11+512];\n"
            "  wmma.mma.sync.aligned.row.row.m16n16k16.f16.f16 " + regs("%d", 0, 4) + ", " + regs("%a", 0, 8) + ", " +
            regs("%b", 0, 8) + ", " + regs("%c", 0, 4) + ";\n"
            "  wmma.store.d.sync.aligned.row.m16n16k16.global.f16 [%rd10], " + regs("%d", 0, 4) + ";\n  ret;";
    Outcome o = run(kernel(body), 1, 32, 128, in);
    ASSERT_TRUE(o.status) << o.status.error().message;
    const std::vector<float> want = product(a, b, 16, 16, 16);
    for (unsigned i = 0; i < 256; ++i) {
      const uint16_t half = uint16_t(o.out[i / 2] >> (16 * (i % 2)));
      EXPECT_EQ(f16ToF32(half), want[i]) << "f16 " << i;
    }
  }
}

TEST_F(EmuTest, MovmatrixTransposesTheWarpsMatrix) {
  // Element (row, col) of the 8x8 b16 matrix is row * 8 + col, held as
  // ldmatrix holds it; after movmatrix lane l holds the transpose's row l/4.
  Outcome o = run(kernel(R"(
  shr.u32 %r6, %r3, 2;
  and.b32 %r7, %r3, 3;
  shl.b32 %r7, %r7, 1;
  shl.b32 %r8, %r6, 3;
  add.u32 %r9, %r8, %r7;
  add.u32 %r10, %r9, 1;
  shl.b32 %r10, %r10, 16;
  or.b32 %r11, %r9, %r10;
  movmatrix.sync.aligned.m8n8.trans.b16 %r12, %r11;
  st.global.u32 [%rd1], %r12;
  ret;)"),
                  1, 32, 32);
  ASSERT_TRUE(o.status) << o.status.error().message;
  for (unsigned l = 0; l < 32; ++l) {
    const uint32_t low = (2 * (l % 4)) * 8 + l / 4, high = (2 * (l % 4) + 1) * 8 + l / 4;
    EXPECT_EQ(o.out[l], low | (high << 16)) << "lane " << l;
  }
}

TEST_F(EmuTest, WmmaWithoutTheWholeWarpIsASynccheckFinding) {
  std::string body = "  .reg .b32 %a<8>;\n  setp.lt.u32 %p1, %r3, 16;\n  @%p1 wmma.load.a.sync.aligned.row.m16n16k16.global.f16 " +
                     regs("%a", 0, 8) + ", [%rd11];\n  ret;";
  Outcome o = run(kernel(body), 1, 32, 256);
  ASSERT_FALSE(o.status);
  const exec::LaunchFinding *sync = find(o, "synccheck");
  ASSERT_NE(sync, nullptr);
  EXPECT_NE(sync->message.find("all 32 lanes of the warp"), std::string::npos) << sync->message;
}

} // namespace
} // namespace ptxforge::emu

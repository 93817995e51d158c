// KernelArgs packs parameters as the PTX .param space lays them out (each at
// its own alignment), and executor errors carry a machine-readable kind and the
// driver's error name.
#include "exec/Executor.h"
#include "exec/Protocol.h"

#include <gtest/gtest.h>

using namespace ptxforge;
using namespace ptxforge::exec;

TEST(KernelArgs, PacksInOrderAtNaturalAlignment) {
  // vec_add(.u64 a, .u64 b, .u32 n, .f64 scale, .u8 flag, .u64 c)
  PackedArgs args = KernelArgs()
                        .buffer(BufferHandle{0x1000})
                        .buffer(BufferHandle{0x2000})
                        .scalar<uint32_t>(7)
                        .scalar<double>(2.5)
                        .scalar<uint8_t>(1)
                        .buffer(BufferHandle{0x3000})
                        .pack();
  ASSERT_EQ(args.slots.size(), 6u);
  const std::vector<PackedArgs::Slot> expected = {
      {0, 8, true}, {8, 8, true}, {16, 4, false}, {24, 8, false}, {32, 1, false}, {40, 8, true}};
  EXPECT_EQ(args.slots, expected);
  EXPECT_EQ(args.bytes.size(), 48u);

  uint64_t address = 0;
  std::memcpy(&address, args.bytes.data() + 40, 8);
  EXPECT_EQ(address, 0x3000u);
  uint32_t count = 0;
  std::memcpy(&count, args.bytes.data() + 16, 4);
  EXPECT_EQ(count, 7u);
  double scale = 0;
  std::memcpy(&scale, args.bytes.data() + 24, 8);
  EXPECT_EQ(scale, 2.5);
  // Padding bytes are zero, so packed images compare and hash deterministically.
  for (size_t offset = 20; offset < 24; ++offset)
    EXPECT_EQ(args.bytes[offset], 0);
}

TEST(KernelArgs, RawBlobsTakeTheirAlignment) {
  struct alignas(16) Float4 {
    float x, y, z, w;
  };
  const Float4 value{1, 2, 3, 4};
  PackedArgs args = KernelArgs().scalar<uint16_t>(3).scalar(value).raw("abc", 3, 1).pack();
  ASSERT_EQ(args.slots.size(), 3u);
  EXPECT_EQ(args.slots[0].offset, 0u);
  EXPECT_EQ(args.slots[1].offset, 16u);
  EXPECT_EQ(args.slots[1].size, 16u);
  EXPECT_EQ(args.slots[2].offset, 32u);
  EXPECT_EQ(args.bytes.size(), 35u);
  EXPECT_EQ(std::string(args.bytes.begin() + 32, args.bytes.end()), "abc");
}

TEST(KernelArgs, EmptyListPacksToNothing) {
  PackedArgs args = KernelArgs().pack();
  EXPECT_TRUE(args.bytes.empty());
  EXPECT_TRUE(args.slots.empty());
}

TEST(ExecError, KindIsReadableBackFromTheCode) {
  for (ExecErrorKind kind : {ExecErrorKind::NoDevice, ExecErrorKind::InvalidArgument, ExecErrorKind::OutOfMemory,
                             ExecErrorKind::ModuleLoad, ExecErrorKind::LaunchError, ExecErrorKind::OutOfResources,
                             ExecErrorKind::Crashed, ExecErrorKind::Timeout, ExecErrorKind::Internal,
                             ExecErrorKind::Unavailable, ExecErrorKind::EmuUnsupported}) {
    Error error = makeExecError(kind, "detail");
    EXPECT_EQ(execErrorKindOf(error), kind) << error.message;
    EXPECT_EQ(error.code, execErrorKindName(kind));
    EXPECT_EQ(error.message, "detail"); // the code is a field, not a prefix
  }
  EXPECT_EQ(render(makeExecError(ExecErrorKind::NoDevice, "x")), "no-gpu: x");
  EXPECT_EQ(makeExecError(ExecErrorKind::NoDevice, "x").kind, ErrorKind::ToolMissing);
  EXPECT_EQ(render(makeExecError(ExecErrorKind::Crashed, "x")), "crashed: x");
  EXPECT_EQ(render(makeExecError(ExecErrorKind::Unavailable, "x")), "unavailable: x");
  EXPECT_EQ(makeExecError(ExecErrorKind::Unavailable, "x").kind, ErrorKind::ToolMissing);
  EXPECT_EQ(render(makeExecError(ExecErrorKind::EmuUnsupported, "'vadd' is not emulated", 7)),
            "emu-unsupported: 'vadd' is not emulated (line 7)");
  // Only the code counts: a message that looks like a prefixed one is not an executor error.
  EXPECT_EQ(execErrorKindOf(makeError(ErrorKind::Io, "crashed: not ours")), ExecErrorKind::None);
}

TEST(ExecError, TheDriversNameTravelsThroughTheWorkerProtocol) {
  // The worker's response carries the Error's cause as a field, not inside
  // the message: what IsolatedExecutor rebuilds is what the worker had.
  protocol::Response response;
  response.status = ExecErrorKind::Crashed;
  response.message = "an illegal memory access was encountered in cuCtxSynchronize";
  response.cause = "CUDA_ERROR_ILLEGAL_ADDRESS";
  Result<protocol::Response> decoded = protocol::decodeResponse(protocol::encode(response));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, response);
  EXPECT_EQ(decoded->cause, "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_TRUE(makeExecError(ExecErrorKind::Timeout, "no driver error here").cause.empty());
}

TEST(DeviceProperties, ArchAndBandwidthFromDriverFigures) {
  DeviceProperties properties;
  properties.smMajor = 9;
  properties.smMinor = 0;
  properties.memoryClockRateKHz = 2'619'000;
  properties.memoryBusWidthBits = 6144;
  EXPECT_EQ(properties.arch(), "sm_90");
  EXPECT_NEAR(properties.peakMemoryBandwidthGBs(), 4023.0, 1.0);
}

TEST(KernelArgs, BufferOffsetIsKeptBesideTheHandle) {
  // Interior pointers (past a guard zone) keep the handle in the bytes, so
  // executors can check the buffer is alive, and add the offset at launch.
  PackedArgs args = KernelArgs().buffer(BufferHandle{0x1000}, 256).scalar<int32_t>(7).pack();
  ASSERT_EQ(args.slots.size(), 2u);
  EXPECT_TRUE(args.slots[0].isBuffer);
  EXPECT_EQ(args.slots[0].bufferOffset, 256u);
  uint64_t stored = 0;
  std::memcpy(&stored, args.bytes.data(), sizeof stored);
  EXPECT_EQ(stored, 0x1000u);
  EXPECT_EQ(args.slots[1].bufferOffset, 0u);
}

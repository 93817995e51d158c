// The worker protocol: every field survives a round trip, malformed payloads
// are errors (never crashes), and framed socket I/O honours deadlines and
// reports a closed peer.
#include "exec/Protocol.h"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

using namespace ptxforge;
using namespace ptxforge::exec;
using namespace ptxforge::exec::protocol;

namespace {

Request sampleRequest() {
  Request request;
  request.op = Op::TimeLaunch;
  request.handle = 0x7f00'1234'5678ull;
  request.offset = 64;
  request.bytes = 4096;
  request.value = 0xab;
  request.format = ModuleFormat::Ptx;
  request.name = "vec_add";
  request.data = {1, 2, 3, 0, 255};
  request.config.grid = {100, 2, 1};
  request.config.block = {256, 1, 1};
  request.config.dynamicSharedBytes = 100 * 1024;
  request.config.timeoutMs = 1500;
  request.config.profile = true;
  request.args = KernelArgs().buffer(BufferHandle{42}).scalar<uint32_t>(7).scalar<double>(0.5).pack();
  request.timing = TimingOptions{3, 20, false, 9000, {}};
  request.timing.beforeEachLaunch = {{BufferHandle{5}, 1024, BufferHandle{6}, 0, 4096, 0},
                                     {BufferHandle{7}, 0, BufferHandle{}, 0, 64, 0xab}};
  request.handle2 = 0x7f00'9999'0000ull;
  request.offset2 = 77;
  request.library.op = LibraryOp::GemmBatched;
  request.library.m = 777;
  request.library.n = 1234;
  request.library.k = 333;
  request.library.batch = 16;
  request.library.a = {BufferHandle{0x7f00'0000'1000ull}, 256};
  request.library.b = {BufferHandle{0x7f00'0000'2000ull}, 256};
  request.library.c = {BufferHandle{0x7f00'0000'3000ull}, 512};
  request.library.timeoutMs = 4321;
  return request;
}

Response sampleResponse() {
  Response response;
  response.status = ExecErrorKind::Crashed;
  response.message = "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered) in cuCtxSynchronize";
  response.line = 12;
  response.handle = 99;
  response.data = {9, 8, 7};
  response.timings = {0.125f, 0.25f};
  response.kernel = KernelInfo{KernelHandle{5}, 1024, 32, 0, 16};
  response.properties.name = "NVIDIA H200";
  response.properties.smMajor = 9;
  response.properties.totalMemoryBytes = 150ull << 30;
  response.properties.multiprocessorCount = 132;
  response.properties.l2CacheBytes = 60 << 20;
  response.properties.driverVersion = 13000;
  response.properties.backend = "gpu";
  response.findings = {{"racecheck", true, "racecheck: shared-memory read-after-write hazard ...", 42},
                       {"initcheck", false, "initcheck: %r6 has no value here ...", 7, 12}};
  LaunchProfile profile;
  profile.kernel = "transpose";
  profile.grid[0] = 8, profile.block[1] = 32;
  profile.warpInstructions = 1234, profile.threadInstructions = 39488;
  profile.lines.push_back({17, "ld.shared.f32 %f1, [%r4]", 64, 0, 0, 0, 0, 64, 2048, 64, 0, 0, false, false});
  profile.lines.push_back({21, "st.global.f32 [%rd8], %f1", 64, 64, 2048, 256, 8192, 0, 0, 0, 3, 12, true, true});
  response.profiles = {profile, LaunchProfile{}};
  return response;
}

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }
};

} // namespace

TEST(Protocol, RequestRoundTripKeepsEveryField) {
  const Request request = sampleRequest();
  Result<Request> decoded = decodeRequest(encode(request));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, request);
}

TEST(Protocol, ResponseRoundTripKeepsEveryField) {
  const Response response = sampleResponse();
  Result<Response> decoded = decodeResponse(encode(response));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, response);
}

TEST(Protocol, LibraryCallRequestsRoundTrip) {
  for (Op op : {Op::RunLibraryCall, Op::TimeLibraryCall})
    for (LibraryOp libraryOp :
         {LibraryOp::Gemm, LibraryOp::GemmF16F32, LibraryOp::GemmBatched, LibraryOp::Gemv, LibraryOp::GemmBf16F32}) {
      Request request = sampleRequest();
      request.op = op;
      request.library.op = libraryOp;
      Result<Request> decoded = decodeRequest(encode(request));
      ASSERT_TRUE(decoded) << opName(op) << " " << libraryOpName(libraryOp) << ": " << decoded.error().message;
      EXPECT_EQ(*decoded, request) << opName(op) << " " << libraryOpName(libraryOp);
    }
  EXPECT_STREQ(opName(Op::RunLibraryCall), "run-library-call");
  EXPECT_STREQ(opName(Op::TimeLibraryCall), "time-library-call");
}

TEST(Protocol, UnavailableStatusRoundTrips) {
  Response response;
  response.status = ExecErrorKind::Unavailable;
  response.message = "cuBLAS not found: libcublas.so.13: cannot open shared object file";
  Result<Response> decoded = decodeResponse(encode(response));
  ASSERT_TRUE(decoded) << decoded.error().message;
  EXPECT_EQ(*decoded, response);
}

TEST(Protocol, UnknownLibraryOpIsRejected) {
  Request request = sampleRequest();
  request.op = Op::RunLibraryCall;
  std::vector<uint8_t> payload = encode(request);
  // The library call is the last field: op(1) m n k batch(4 x 8) operands(3 x 16) timeout(4).
  const size_t libraryOpAt = payload.size() - (1 + 4 * 8 + 3 * 16 + 4);
  ASSERT_EQ(payload[libraryOpAt], static_cast<uint8_t>(LibraryOp::GemmBatched));
  payload[libraryOpAt] = 9; // no such LibraryOp
  Result<Request> decoded = decodeRequest(payload);
  ASSERT_FALSE(decoded);
  EXPECT_EQ(execErrorKindOf(decoded.error()), ExecErrorKind::Internal);
}

TEST(Protocol, DefaultMessagesRoundTrip) {
  Result<Request> request = decodeRequest(encode(Request{}));
  ASSERT_TRUE(request);
  EXPECT_EQ(*request, Request{});
  Result<Response> response = decodeResponse(encode(Response{}));
  ASSERT_TRUE(response);
  EXPECT_EQ(*response, Response{});
}

TEST(Protocol, EveryTruncationIsAnErrorNotACrash) {
  const std::vector<uint8_t> request = encode(sampleRequest());
  for (size_t length = 0; length < request.size(); ++length) {
    std::vector<uint8_t> prefix(request.begin(), request.begin() + length);
    Result<Request> decoded = decodeRequest(prefix);
    ASSERT_FALSE(decoded) << "a " << length << "-byte prefix decoded";
    EXPECT_EQ(execErrorKindOf(decoded.error()), ExecErrorKind::Internal);
  }
  const std::vector<uint8_t> response = encode(sampleResponse());
  for (size_t length = 0; length < response.size(); ++length)
    ASSERT_FALSE(decodeResponse(std::vector<uint8_t>(response.begin(), response.begin() + length)));
}

TEST(Protocol, TrailingBytesAndUnknownEnumsAreRejected) {
  std::vector<uint8_t> payload = encode(sampleRequest());
  payload.push_back(0);
  Result<Request> trailing = decodeRequest(payload);
  ASSERT_FALSE(trailing);
  EXPECT_NE(trailing.error().message.find("trailing"), std::string::npos);

  payload = encode(sampleRequest());
  payload[0] = 77; // no such Op
  EXPECT_FALSE(decodeRequest(payload));

  std::vector<uint8_t> response = encode(sampleResponse());
  response[0] = 200; // no such ExecErrorKind
  EXPECT_FALSE(decodeResponse(response));
}

TEST(Protocol, HugeLengthFieldIsRejectedWithoutAllocating) {
  std::vector<uint8_t> payload = encode(Request{});
  // The `name` string's u64 length follows op(1) handle(8) offset(8) handle2(8)
  // offset2(8) bytes(8) value(4) format(1).
  const size_t nameLength = 1 + 8 + 8 + 8 + 8 + 8 + 4 + 1;
  const uint64_t huge = ~0ull;
  std::memcpy(payload.data() + nameLength, &huge, sizeof huge);
  EXPECT_FALSE(decodeRequest(payload));
}

TEST(Protocol, FramesCrossASocket) {
  SocketPair pair;
  const std::vector<uint8_t> payload = encode(sampleRequest());
  ASSERT_TRUE(writeFrame(pair.fds[0], payload));
  ASSERT_TRUE(writeFrame(pair.fds[0], {}));
  Result<std::vector<uint8_t>> first = readFrame(pair.fds[1], 1000);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_EQ(*first, payload);
  Result<std::vector<uint8_t>> empty = readFrame(pair.fds[1], 1000);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(Protocol, ReadFrameTimesOutWhenNothingArrives) {
  SocketPair pair;
  Result<std::vector<uint8_t>> frame = readFrame(pair.fds[1], 50);
  ASSERT_FALSE(frame);
  EXPECT_EQ(execErrorKindOf(frame.error()), ExecErrorKind::Timeout);
}

TEST(Protocol, ClosedPeerIsReportedAsCrashed) {
  SocketPair pair;
  ::close(pair.fds[0]);
  pair.fds[0] = -1;
  Result<std::vector<uint8_t>> frame = readFrame(pair.fds[1], 1000);
  ASSERT_FALSE(frame);
  EXPECT_EQ(execErrorKindOf(frame.error()), ExecErrorKind::Crashed);
  // Writing to the closed peer is an error value, not a SIGPIPE.
  Result<void> written = writeFrame(pair.fds[1], {1, 2, 3});
  EXPECT_FALSE(written);
}

TEST(Protocol, BadMagicIsRejected) {
  SocketPair pair;
  const uint32_t header[2] = {0x12345678, 0};
  ASSERT_EQ(::write(pair.fds[0], header, sizeof header), static_cast<ssize_t>(sizeof header));
  Result<std::vector<uint8_t>> frame = readFrame(pair.fds[1], 1000);
  ASSERT_FALSE(frame);
  EXPECT_NE(frame.error().message.find("magic"), std::string::npos);
}

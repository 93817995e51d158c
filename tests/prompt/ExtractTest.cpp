// extractPtx over realistic completions: what it takes, and the error a model reads when there is nothing to take.
#include "prompt/Extract.h"

#include <gtest/gtest.h>

using namespace ptxforge;
using namespace ptxforge::prompt;

namespace {

const std::string kModule = ".version 8.0\n.target sm_90\n.address_size 64\n\n"
                            ".visible .entry saxpy(\n    .param .u64 saxpy_param_0\n)\n{\n    ret;\n}\n";

std::string fenced(const std::string &language, const std::string &body) { return "```" + language + "\n" + body + "```\n"; }

} // namespace

TEST(Extract, PtxFenceWithChatter) {
  std::string answer = "Here is the kernel. It uses one thread per element.\n\n" + fenced("ptx", kModule) +
                       "\nThis should be fast because loads coalesce.";
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->ptx, kModule);
  EXPECT_EQ(got->source, PtxSource::PtxFence);
  EXPECT_EQ(got->firstLine, 4u);
  EXPECT_EQ(got->candidateBlocks, 1u);
  EXPECT_FALSE(got->directiveMoved);
}

TEST(Extract, PlainFenceAndOtherLanguage) {
  auto plain = extractPtx(fenced("", kModule));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->source, PtxSource::OtherFence);
  EXPECT_EQ(plain->ptx, kModule);
  auto tilde = extractPtx("~~~asm\n" + kModule + "~~~\n");
  ASSERT_TRUE(tilde.ok());
  EXPECT_EQ(tilde->fenceLanguage, "asm");
}

TEST(Extract, Unfenced) {
  std::string answer = "Sure!\n// @ptxforge block=(128,1,1) grid=(ceildiv(n,128),1,1)\n" + kModule + "Hope this helps.\n";
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->source, PtxSource::Unfenced);
  EXPECT_EQ(got->ptx, "// @ptxforge block=(128,1,1) grid=(ceildiv(n,128),1,1)\n" + kModule);
}

TEST(Extract, LastRevisionWinsAndPtxFencePreferred) {
  std::string second = kModule;
  second.replace(second.find("ret;"), 4, "exit;");
  std::string answer = "First try:\n" + fenced("ptx", kModule) + "Wait, that is wrong. Revised:\n" + fenced("ptx", second) +
                       "And the CUDA it corresponds to:\n" + fenced("cuda", "__global__ void saxpy() {}\n");
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ptx, second);
  EXPECT_EQ(got->candidateBlocks, 2u);
  ASSERT_FALSE(got->notes.empty());

  // A later unlabeled block loses to an earlier ```ptx one.
  auto preferred = extractPtx(fenced("ptx", kModule) + fenced("", second));
  ASSERT_TRUE(preferred.ok());
  EXPECT_EQ(preferred->ptx, kModule);
}

TEST(Extract, SnippetFencesAreNotModules) {
  // A ```ptx fence with one instruction is not a module; the module is the other block.
  std::string answer = "Use `fma`:\n" + fenced("ptx", "fma.rn.f32 %f3, %f1, %f2, %f3;\n") + fenced("", kModule);
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ptx, kModule);
}

TEST(Extract, ThinkingIsIgnored) {
  std::string draft = kModule;
  draft.replace(draft.find("ret;"), 4, "trap;");
  std::string answer = "<think>\nLet me draft:\n" + fenced("ptx", draft) + "</think>\n" + fenced("ptx", kModule);
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ptx, kModule);
  // Only thinking holds PTX: take it, and say so.
  auto only = extractPtx("<think>\n" + fenced("ptx", draft) + "</think>\nDone.");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->ptx, draft);
}

TEST(Extract, DirectiveInsideBlockIsKept) {
  std::string body = "// @ptxforge block=(64,1,1)\n" + kModule;
  auto got = extractPtx(fenced("ptx", body));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ptx, body);
}

TEST(Extract, DirectiveBeforeFenceIsMovedIn) {
  std::string answer = "Launch with:\n`// @ptxforge block=(64,1,1) grid=(ceildiv(n,64),1,1)`\n\n" + fenced("ptx", kModule);
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->directiveMoved);
  EXPECT_EQ(got->ptx, "// @ptxforge block=(64,1,1) grid=(ceildiv(n,64),1,1)\n" + kModule);

  // The module's own directive wins; the outside one is dropped with a note.
  std::string own = "// @ptxforge block=(32,1,1)\n" + kModule;
  auto kept = extractPtx("// @ptxforge block=(64,1,1)\n" + fenced("ptx", own));
  ASSERT_TRUE(kept.ok());
  EXPECT_FALSE(kept->directiveMoved);
  EXPECT_EQ(kept->ptx, own);
}

TEST(Extract, UnclosedFenceWithWholeModuleIsAccepted) {
  auto got = extractPtx("```ptx\n" + kModule + "\n");
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->ptx, kModule);
}

TEST(Extract, TruncatedBlockIsAnError) {
  std::string cut = kModule.substr(0, kModule.find("ret;"));
  auto got = extractPtx("Here it is:\n```ptx\n" + cut);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().kind, ErrorKind::InvalidInput);
  EXPECT_NE(got.error().message.find("cut off"), std::string::npos) << got.error().message;
  EXPECT_NE(got.error().message.find("line 2"), std::string::npos) << got.error().message;

  auto bare = extractPtx(cut);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message.find("cut off"), std::string::npos);

  // A complete earlier block beats a cut-off revision.
  auto earlier = extractPtx(fenced("ptx", kModule) + "Better:\n```ptx\n" + cut);
  ASSERT_TRUE(earlier.ok());
  EXPECT_EQ(earlier->ptx, kModule);
}

TEST(Extract, NonPtxIsRejectedWithActionableMessage) {
  const std::string expected = "the answer has no PTX module";
  for (const std::string &answer : {std::string("I cannot help with that."),
                                    std::string("{\"error\": {\"message\": \"rate limited\", \"code\": 429}}"),
                                    fenced("cuda", "__global__ void saxpy(float a, float *x) { x[0] *= a; }\n"),
                                    std::string("Use fma.rn.f32 and ld.global.v4.f32 for speed.")}) {
    auto got = extractPtx(answer);
    ASSERT_FALSE(got.ok()) << answer;
    EXPECT_EQ(got.error().kind, ErrorKind::InvalidInput);
    EXPECT_NE(got.error().message.find(expected), std::string::npos) << got.error().message;
    EXPECT_NE(got.error().message.find("```ptx fenced block containing .version, .target and an .entry"), std::string::npos);
  }
}

TEST(Extract, EmptyAnswer) {
  for (const char *answer : {"", "  \n\n\t"}) {
    auto got = extractPtx(answer);
    ASSERT_FALSE(got.ok());
    EXPECT_NE(got.error().message.find("the answer is empty"), std::string::npos);
  }
}

TEST(Extract, CrLfAndIndentedFence) {
  std::string answer = "  ```ptx\r\n.version 8.0\r\n.target sm_90\r\n.visible .entry k()\r\n{\r\nret;\r\n}\r\n  ```\r\n";
  auto got = extractPtx(answer);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->ptx, ".version 8.0\n.target sm_90\n.visible .entry k()\n{\nret;\n}\n");
}

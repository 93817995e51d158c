// Parser tests: the AST for each construct real PTX uses, and error recovery.
#include "ptx/Parser.h"

#include <gtest/gtest.h>

using namespace ptxforge::ptx;

namespace {

const char *kHeader = ".version 8.5\n.target sm_90\n.address_size 64\n";

/// Parses `body` as the body of one kernel and returns its statements.
std::vector<Statement> parseBody(const std::string &body, std::vector<Diagnostic> *diagnostics = nullptr) {
  ParseResult result = parse(std::string(kHeader) + ".visible .entry k()\n{\n" + body + "\n}\n");
  if (diagnostics)
    *diagnostics = result.diagnostics;
  else
    EXPECT_TRUE(result.diagnostics.empty()) << result.diagnostics.front().message;
  if (result.module.items.empty()) return {};
  return result.module.items.back().function.body;
}

Instruction parseInstruction(const std::string &text) {
  std::vector<Statement> body = parseBody(text);
  EXPECT_EQ(body.size(), 1u);
  EXPECT_EQ(body.at(0).kind, Statement::Kind::Instruction);
  return body.at(0).instruction;
}

} // namespace

TEST(Parser, ModuleDirectives) {
  ParseResult result = parse(".version 9.0\n.target sm_90a, texmode_independent\n.address_size 64\n");
  ASSERT_TRUE(result.diagnostics.empty());
  EXPECT_EQ(result.module.version, std::make_pair(9u, 0u));
  ASSERT_EQ(result.module.targets.size(), 2u);
  EXPECT_EQ(result.module.targets[0], "sm_90a");
  EXPECT_TRUE(targetIsArchSpecific(result.module.targets[0]));
  EXPECT_EQ(targetSmNumber(result.module.targets[0]), 90u);
  EXPECT_EQ(result.module.addressSize, 64u);
}

TEST(Parser, ArchSpecificPtxIsCompiledForItsOwnTargetOnThatSm) {
  auto archFor = [](const char *target, const char *arch) {
    return compileArchFor(parse(std::string(".version 8.5\n.target ") + target + "\n.address_size 64\n").module, arch);
  };
  EXPECT_EQ(archFor("sm_90a", "sm_90"), "sm_90a");   // wgmma PTX on an H100 or H200
  EXPECT_EQ(archFor("sm_100f", "sm_100"), "sm_100f");
  EXPECT_EQ(archFor("sm_90", "sm_90"), "sm_90");
  EXPECT_EQ(archFor("sm_80", "sm_90"), "sm_90");     // older PTX runs on the newer device
  EXPECT_EQ(archFor("sm_100a", "sm_90"), "sm_90");   // another SM: ptxas says why
  EXPECT_EQ(archFor("sm_90", "sm_90a"), "sm_90a");   // asked for explicitly
  EXPECT_EQ(archFor("sm_90a, texmode_independent", "sm_90"), "sm_90a");
}

TEST(Parser, EntryWithParametersAndTuning) {
  ParseResult result = parse(std::string(kHeader) +
                             ".visible .entry gemm(\n"
                             "  .param .u64 .ptr.global.align 16 gemm_param_0,\n"
                             "  .param .align 8 .b8 gemm_param_1[16],\n"
                             "  .param .u32 gemm_param_2\n"
                             ")\n.maxntid 256, 1, 1\n.minnctapersm 2\n{\n ret;\n}\n");
  ASSERT_TRUE(result.diagnostics.empty()) << result.diagnostics.front().message;
  const Function &f = result.module.items.at(0).function;
  EXPECT_TRUE(f.isEntry);
  EXPECT_EQ(f.linkage, "visible");
  ASSERT_EQ(f.params.size(), 3u);
  EXPECT_TRUE(f.params[0].isPtr);
  EXPECT_EQ(f.params[0].ptrSpace, "global");
  EXPECT_EQ(f.params[0].ptrAlign, 16u);
  EXPECT_EQ(f.params[1].align, 8u);
  EXPECT_EQ(f.params[1].arrayDims, std::vector<uint64_t>{16});
  ASSERT_EQ(f.tuning.size(), 2u);
  EXPECT_EQ(f.tuning[0].name, "maxntid");
  EXPECT_EQ(f.tuning[0].values, (std::vector<std::string>{"256", "1", "1"}));
}

TEST(Parser, FuncWithReturnParameterAndDeclarationOnly) {
  ParseResult result = parse(std::string(kHeader) +
                             ".extern .func (.param .b32 func_retval0) vprintf(.param .b64 a, .param .b64 b);\n"
                             ".func (.param .b32 r) f(.reg .b32 x) { ret; }\n");
  ASSERT_TRUE(result.diagnostics.empty());
  const Function &decl = result.module.items.at(0).function;
  EXPECT_FALSE(decl.hasBody);
  EXPECT_EQ(decl.linkage, "extern");
  ASSERT_EQ(decl.returnParams.size(), 1u);
  EXPECT_EQ(decl.returnParams[0].name, "func_retval0");
  EXPECT_EQ(result.module.items.at(1).function.params.at(0).space, StateSpace::Reg);
}

TEST(Parser, DeclarationsInEveryStateSpace) {
  ParseResult result = parse(std::string(kHeader) +
                             ".global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
                             ".const .f32 scale = 0f3F800000;\n"
                             ".extern .shared .align 16 .b8 dynamic_smem[];\n"
                             ".visible .entry k()\n{\n"
                             "  .reg .pred %p<3>;\n  .reg .b32 %r<10>, %extra;\n  .reg .v4 .f32 %vec;\n"
                             "  .local .align 8 .b8 __local_depot0[64];\n  .shared .align 4 .f32 tile[32][33];\n"
                             "  ret;\n}\n");
  ASSERT_TRUE(result.diagnostics.empty()) << result.diagnostics.front().message;
  const auto &items = result.module.items;
  EXPECT_EQ(items[0].variable.initializer, "{1, 2, 3, 4, 5, 6, 7, 8}");
  EXPECT_EQ(items[1].variable.space, StateSpace::Const);
  EXPECT_EQ(items[2].variable.linkage, "extern");
  EXPECT_EQ(items[2].variable.arrayDims, std::vector<uint64_t>{0});
  const auto &body = items[3].function.body;
  EXPECT_EQ(body[0].variable.rangeCount, 3u);
  EXPECT_EQ(body[1].variable.name, "%r");
  EXPECT_EQ(body[2].variable.name, "%extra");
  EXPECT_EQ(body[2].variable.type, "b32");
  EXPECT_EQ(body[3].variable.vectorWidth, 4u);
  EXPECT_EQ(body[5].variable.arrayDims, (std::vector<uint64_t>{32, 33}));
}

TEST(Parser, GuardsModifiersAndOperands) {
  Instruction i = parseInstruction("@!%p1 ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+-16];");
  EXPECT_EQ(i.guard, "%p1");
  EXPECT_TRUE(i.guardNegated);
  EXPECT_EQ(i.opcode, "ld");
  EXPECT_EQ(i.modifiers, (std::vector<std::string>{"global", "nc", "v4", "f32"}));
  ASSERT_EQ(i.operands.size(), 2u);
  EXPECT_EQ(i.operands[0].kind, Operand::Kind::Vector);
  EXPECT_EQ(i.operands[0].elements.size(), 4u);
  EXPECT_EQ(i.operands[1].kind, Operand::Kind::Address);
  EXPECT_EQ(i.operands[1].name, "%rd1");
  EXPECT_EQ(i.operands[1].intValue, -16);
}

TEST(Parser, Immediates) {
  Instruction i = parseInstruction("mov.b32 %r1, 0xFFFFFFFF;");
  EXPECT_EQ(i.operands[1].intValue, 0xFFFFFFFFll);
  EXPECT_EQ(i.operands[1].text, "0xFFFFFFFF");
  EXPECT_EQ(parseInstruction("add.s32 %r1, %r2, -1;").operands[2].intValue, -1);
  EXPECT_DOUBLE_EQ(parseInstruction("mov.f32 %f1, 0f3F800000;").operands[1].floatValue, 1.0);
  EXPECT_DOUBLE_EQ(parseInstruction("mov.f64 %fd1, 0dBFF0000000000000;").operands[1].floatValue, -1.0);
  EXPECT_DOUBLE_EQ(parseInstruction("mov.f64 %fd1, 2.5;").operands[1].floatValue, 2.5);
}

TEST(Parser, SpecialRegistersPairsAndNegatedPredicates) {
  EXPECT_EQ(parseInstruction("mov.u32 %r1, %tid.x;").operands[1].name, "%tid.x");
  Instruction shfl = parseInstruction("shfl.sync.bfly.b32 %r1|%p1, %r2, 1, 31, -1;");
  EXPECT_EQ(shfl.operands[0].kind, Operand::Kind::Pair);
  EXPECT_EQ(shfl.operands[0].elements[1].name, "%p1");
  Instruction setp = parseInstruction("setp.lt.and.s32 %p1, %r1, %r2, !%p2;");
  EXPECT_TRUE(setp.operands[3].negated);
}

TEST(Parser, AddressForms) {
  EXPECT_EQ(parseInstruction("ld.global.u32 %r1, [table+4];").operands[1].name, "table");
  EXPECT_EQ(parseInstruction("ld.global.u32 %r1, [table+4];").operands[1].intValue, 4);
  Instruction absolute = parseInstruction("ld.shared.u32 %r1, [1024];");
  EXPECT_TRUE(absolute.operands[1].name.empty());
  EXPECT_EQ(absolute.operands[1].intValue, 1024);
  Instruction tensor =
      parseInstruction("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];");
  EXPECT_EQ(tensor.operands[1].elements.at(0).elements.size(), 2u);
}

TEST(Parser, CallWithParameterListsAndPrototype) {
  std::vector<Statement> body = parseBody(
      "{\n .param .b64 param0;\n .param .b32 retval0;\n"
      " call.uni (retval0), vprintf, (param0, param1);\n}\n"
      "prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);\n"
      "call (retval0), %rd5, (param0), prototype_0;");
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[0].kind, Statement::Kind::Block);
  const Instruction &call = body[0].block.statements.at(2).instruction;
  EXPECT_EQ(call.operands[0].kind, Operand::Kind::List);
  EXPECT_EQ(call.operands[1].name, "vprintf");
  EXPECT_EQ(call.operands[2].elements.size(), 2u);
  EXPECT_EQ(body[1].kind, Statement::Kind::Label);
  EXPECT_EQ(body[2].kind, Statement::Kind::Directive);
  EXPECT_EQ(body[2].directive.name, "callprototype");
  EXPECT_EQ(body[2].directive.text, "(.param .b32 _) _ (.param .b64 _)");
}

TEST(Parser, DebugDirectivesAreKept) {
  ParseResult result = parse(std::string(kHeader) +
                             ".file 1 \"/src/a.cu\"\n"
                             ".visible .entry k()\n{\n.loc 1 5 3\n ret;\n}\n"
                             ".section .debug_str\n{\n$L__info_string0:\n.b8 95, 0\n}\n");
  ASSERT_TRUE(result.diagnostics.empty()) << result.diagnostics.front().message;
  EXPECT_EQ(result.module.items[0].directive.name, "file");
  EXPECT_EQ(result.module.items[1].function.body[0].directive.text, "1 5 3");
  EXPECT_EQ(result.module.items[2].directive.name, "section");
}

TEST(Parser, LocationsPointAtTokens) {
  std::vector<Statement> body = parseBody("  add.s32 %r1, %r2, 4;");
  EXPECT_EQ(body[0].instruction.loc.line, 6u);
  EXPECT_EQ(body[0].instruction.loc.column, 3u);
  EXPECT_EQ(body[0].instruction.operands[1].loc.column, 16u);
}

TEST(ParserRecovery, OneBadLineDoesNotHideTheNext) {
  std::vector<Diagnostic> diagnostics;
  std::vector<Statement> body = parseBody("add.s32 %r1, %r2 %r3;\n"   // line 6: missing comma
                                          "mov.u32 %r1, ;\n"          // line 7: missing operand
                                          "ld.global.u32 %r1, [%rd1 + %rd2];\n" // line 8: reg+reg address
                                          "sub.s32 %r4, %r5, 1\n"     // line 9: missing ';'
                                          "ret;",                      // line 10: still parsed
                                          &diagnostics);
  ASSERT_EQ(diagnostics.size(), 4u);
  EXPECT_EQ(diagnostics[0].line, 6u);
  EXPECT_EQ(diagnostics[1].line, 7u);
  EXPECT_EQ(diagnostics[2].line, 8u);
  EXPECT_EQ(diagnostics[3].line, 9u);
  EXPECT_NE(diagnostics[3].message.find("expected ';'"), std::string::npos);
  for (const Diagnostic &d : diagnostics) EXPECT_EQ(d.code, "syntax");
  ASSERT_FALSE(body.empty());
  EXPECT_EQ(body.back().instruction.opcode, "ret");
}

TEST(ParserRecovery, TruncatedModuleGetsOneErrorAtTheEnd) {
  std::string source = std::string(kHeader) + ".visible .entry k(\n.param .u64 p\n)\n{\n.reg .b32 %r<4>;\nadd.s32 %r1, %r2,";
  for (size_t cut = std::string(kHeader).size(); cut <= source.size(); ++cut) {
    ParseResult result = parse(source.substr(0, cut));
    EXPECT_LE(result.diagnostics.size(), 1u) << "cut at " << cut;
  }
  ParseResult result = parse(source);
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_NE(result.diagnostics[0].message.find("truncated"), std::string::npos);
  EXPECT_EQ(result.diagnostics[0].line, 9u);
  EXPECT_NE(result.diagnostics[0].hint.find("'k'"), std::string::npos);
}

TEST(ParserRecovery, MissingCloseBraceBeforeNextFunction) {
  ParseResult result = parse(std::string(kHeader) + ".entry a()\n{\nret;\n\n.entry b()\n{\nret;\n}\n");
  ASSERT_EQ(result.diagnostics.size(), 1u);
  EXPECT_EQ(result.diagnostics[0].line, 8u);
  ASSERT_EQ(result.module.items.size(), 2u);
  EXPECT_EQ(result.module.items[1].function.name, "b");
}

TEST(ParserRecovery, GarbageNeverCrashes) {
  const char *inputs[] = {"", "}", "{{{{", ".entry", ".entry k(", "@", "[", ".reg .b32 %r<", "\x01\x02\xff",
                          ".version", ".target", ".visible .entry k() { @%p ld.global [",
                          ".global .b8 x[] = {", ".entry k() { { { ret; }"};
  for (const char *input : inputs) {
    ParseResult result = parse(input);
    (void)result;
  }
  SUCCEED();
}

TEST(Parser, VideoSelectorsAndNegatedSources) {
  Instruction vmax = parseInstruction("vmax.s32.s32.s32.max %r1, %r2.h0, %r3, %r4;");
  EXPECT_EQ(vmax.operands[1].name, "%r2.h0");
  Instruction vmad = parseInstruction("vmad.s32.u32.s32.shr7 %r1, -%r2.b0, %r3.h1, %r4;");
  EXPECT_TRUE(vmad.operands[1].minus);
  EXPECT_EQ(vmad.operands[1].name, "%r2.b0");
  EXPECT_EQ(parseInstruction("add.s32 %r1, %r2, -4;").operands[2].intValue, -4);
}

TEST(Parser, OldStylePrototypesWithoutSemicolon) {
  // nvopencc's prototypes: no `;`, the next item on the next line.
  ParseResult result = parse(std::string(kHeader) +
                             ".visible .func (.param .s32 r) f (.param .s32 a)\n"
                             ".visible .func g ()\n"
                             ".file 1 \"a.cu\"\n"
                             ".visible .func (.param .s32 r) f (.param .s32 a)\n{\nret;\n}\n");
  ASSERT_TRUE(result.diagnostics.empty()) << result.diagnostics.front().message;
  ASSERT_EQ(result.module.items.size(), 4u);
  EXPECT_EQ(result.module.items[0].function.name, "f");
  EXPECT_FALSE(result.module.items[0].function.hasBody);
  EXPECT_TRUE(result.module.items[0].function.tuning.empty()); // `.visible .func` is not a tuning directive
  EXPECT_EQ(result.module.items[1].function.name, "g");
  EXPECT_TRUE(result.module.items[3].function.hasBody);
}

TEST(Parser, VectorWidthAfterTypeIsASyntaxError) {
  std::vector<Diagnostic> diagnostics;
  std::vector<Statement> body = parseBody(".reg .b32 .v2 %v;\n.reg .v2 .b32 %w;", &diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].line, 6u);
  EXPECT_NE(diagnostics[0].message.find("'.v2' must come before the type"), std::string::npos);
  ASSERT_EQ(body.size(), 2u); // the declaration is kept
  EXPECT_EQ(body[0].variable.vectorWidth, 2u);
}

TEST(ParserRecovery, BarePredicateGetsItsOwnMessage) {
  std::vector<Diagnostic> diagnostics;
  parseBody("%p1 bra.uni \tDONE;\nDONE:\nret;", &diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_NE(diagnostics[0].message.find("guard predicate is written with '@'"), std::string::npos);
  EXPECT_EQ(diagnostics[0].hint, "write `@%p1 bra.uni DONE;` (or `@!%p1` to negate it)");
}

TEST(ParserRecovery, ARegisterAloneOnItsLineIsNoOpcode) {
  // The rest of `%p1 bra.uni DONE;` commented out: the next line's `ret` must
  // not become the operand of an instruction named `%p1` (which printed and
  // parsed back as the one-line form, a syntax error: the fuzzer found it).
  std::vector<Diagnostic> diagnostics;
  parseBody("%p1 //bra.uni DONE;\nret;", &diagnostics);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].line, 6u);
  EXPECT_NE(diagnostics[0].message.find("register '%p1' where an instruction belongs"), std::string::npos);
}

TEST(ParserRecovery, UnreadNamesComeFromBrokenDeclarationsNotInstructions) {
  ParseResult result = parse(std::string(kHeader) +
                             ".visible .entry k()\n{\n.reg .b32 %r<4 ;\nadd.s32 %q1, %q2 %q3;\nret;\n}\n");
  ASSERT_EQ(result.diagnostics.size(), 2u);
  EXPECT_TRUE(result.unreadNames.count("%r"));   // the broken `.reg` may have declared %r0..
  EXPECT_FALSE(result.unreadNames.count("%q2")); // a broken instruction declares nothing
}

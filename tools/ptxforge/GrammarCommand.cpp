// `ptxforge grammar`: prints the PTX grammar of ptx/Grammar.h.
#include "GrammarCommand.h"

#include "GateOptions.h"
#include "Output.h"

#include "prompt/PromptBuilder.h"
#include "ptx/Grammar.h"
#include "ptx/Parser.h"

#include <iostream>
#include <memory>

namespace ptxforge::cli {

Result<ptx::EntrySignature> taskEntrySignature(const tasks::TaskSpec &task) {
  // A declaration (`;` for the body) in a module the parser reads as is.
  std::string module = ".version 9.0\n.target sm_90\n.address_size 64\n" + prompt::ptxSignature(task) + ";\n";
  ptx::ParseResult parsed = ptx::parse(module, ptx::DiagnosticLimits::unlimited());
  for (const ptx::TopLevel &item : parsed.module.items) {
    if (item.kind != ptx::TopLevel::Kind::Function || !item.function.isEntry) continue;
    ptx::EntrySignature signature;
    signature.kernel = item.function.name;
    for (const ptx::VariableDecl &param : item.function.params) {
      signature.paramTypes.push_back(param.type);
      signature.paramAligns.push_back(param.align);
      signature.paramArrayBytes.push_back(param.arrayDims.size() == 1 ? param.arrayDims[0] : 0);
    }
    if (parsed.diagnostics.empty()) return signature;
  }
  return makeError(ErrorKind::Internal, "the prompt's signature of task '" + task.name + "' does not parse as PTX");
}

Result<std::string> buildGrammar(const std::string &format, const std::string &arch,
                                 const std::optional<std::string> &task, const std::vector<std::string> &tasksDirs) {
  ptx::GrammarOptions options;
  std::optional<ptx::GrammarFormat> parsedFormat = ptx::parseGrammarFormat(format);
  if (!parsedFormat)
    return makeError(ErrorKind::InvalidInput, "unknown grammar format '" + format + "' (valid: gbnf, lark, ebnf)");
  options.format = *parsedFormat;
  options.arch = arch;
  if (task) {
    Result<tasks::Suite> suite = loadSuite(tasksDirs);
    if (!suite) return suite.error();
    Result<const tasks::TaskSpec *> found = findTask(*suite, *task);
    if (!found) return found.error();
    Result<ptx::EntrySignature> signature = taskEntrySignature(**found);
    if (!signature) return signature.error();
    options.entry = std::move(signature.value());
  }
  return ptx::generateGrammar(options);
}

namespace {

struct GrammarCli {
  std::string format = "gbnf";
  std::string arch;
  std::string task;
  std::vector<std::string> tasksDirs;
};

} // namespace

void registerGrammarCommand(CLI::App &app, int &exitCode) {
  auto cli = std::make_shared<GrammarCli>();
  CLI::App *command = app.add_subcommand(
      "grammar", "Print the PTX grammar for constrained decoding (llama.cpp GBNF, llguidance Lark, xgrammar EBNF)");
  command->add_option("--format", cli->format, "gbnf (llama.cpp), lark (llguidance: vLLM, SGLang) or ebnf (xgrammar)")
      ->check(CLI::IsMember({"gbnf", "lark", "ebnf"}))
      ->capture_default_str();
  command->add_option("--arch", cli->arch,
                      "Fix `.target` to this target and leave out the opcodes and modifiers it lacks (default: any)");
  command->add_option("--task", cli->task, "Fix the `.entry` line and its parameters to this task's signature");
  command->add_option("--tasks-dir", cli->tasksDirs,
                      "Extra folder of tasks, searched before $PTXFORGE_TASKS_DIR (':'-separated) and the built-in suite "
                      "(repeatable)");
  command->callback([cli, &exitCode] {
    std::optional<std::string> task;
    if (!cli->task.empty()) task = cli->task;
    Result<std::string> grammar = buildGrammar(cli->format, cli->arch, task, cli->tasksDirs);
    if (!grammar) {
      exitCode = fail("text", grammar.error());
      return;
    }
    std::cout << grammar.value();
    exitCode = kExitOk;
  });
}

} // namespace ptxforge::cli

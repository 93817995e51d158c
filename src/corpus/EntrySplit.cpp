// EntrySplit: reachability over the PTX AST (calls and symbol references),
// then printing the kept items in their original order.
#include "corpus/EntrySplit.h"

#include "ptx/Ast.h"
#include "ptx/Parser.h"
#include "ptx/Printer.h"

#include <cxxabi.h>

#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

namespace ptxforge::corpus {

namespace {

/// Identifiers in an initializer such as `{generic(table), 0}`.
void collectInitializerNames(const std::string &initializer, std::set<std::string> &names) {
  for (size_t i = 0; i < initializer.size();) {
    size_t end = i;
    while (end < initializer.size() && (std::isalnum(static_cast<unsigned char>(initializer[end])) ||
                                        initializer[end] == '_' || initializer[end] == '$'))
      ++end;
    if (end > i) names.insert(initializer.substr(i, end - i));
    i = end + 1;
  }
}

void collectOperandNames(const ptx::Operand &operand, std::set<std::string> &names) {
  if (!operand.name.empty()) names.insert(operand.name);
  for (const ptx::Operand &element : operand.elements) collectOperandNames(element, names);
}

void collectStatements(const std::vector<ptx::Statement> &statements, std::set<std::string> &names,
                       std::vector<std::string> *tokens) {
  for (const ptx::Statement &statement : statements) {
    switch (statement.kind) {
    case ptx::Statement::Kind::Instruction: {
      const ptx::Instruction &instruction = statement.instruction;
      for (const ptx::Operand &operand : instruction.operands) collectOperandNames(operand, names);
      if (tokens) {
        std::string token = instruction.opcode;
        for (const std::string &modifier : instruction.modifiers) token += "." + modifier;
        tokens->push_back(std::move(token));
      }
      break;
    }
    case ptx::Statement::Kind::Variable:
      // A local variable's initializer may name a module-scope symbol.
      collectInitializerNames(statement.variable.initializer, names);
      break;
    case ptx::Statement::Kind::Block: collectStatements(statement.block.statements, names, tokens); break;
    case ptx::Statement::Kind::Label:
    case ptx::Statement::Kind::Directive: break;
    }
  }
}

/// DWARF sections other than .debug_str: they describe every function of
/// the module. .debug_str stays: -lineinfo's `.loc ..., function_name
/// $L__info_string0` lines name its labels.
bool isDroppableDwarfSection(const ptx::Directive &directive) {
  return directive.name == "section" && directive.text.rfind(".debug", 0) == 0 &&
         directive.text.rfind(".debug_str", 0) != 0;
}

} // namespace

std::string demangledName(const std::string &entry) {
  if (entry.rfind("_Z", 0) != 0) return entry;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(abi::__cxa_demangle(entry.c_str(), nullptr, nullptr, &status),
                                                   &std::free);
  return status == 0 && text ? std::string(text.get()) : entry;
}

Result<std::vector<EntryModule>> splitEntries(std::string_view text) {
  ptx::ParseResult parsed = ptx::parse(text, ptx::DiagnosticLimits::unlimited());
  for (const ptx::Diagnostic &diagnostic : parsed.diagnostics)
    if (diagnostic.severity == ptx::Severity::Error)
      return makeError(ErrorKind::InvalidInput, "ptx-syntax",
                       "the PTX does not parse: " + diagnostic.message, diagnostic.line, diagnostic.column);
  const ptx::Module &module = parsed.module;

  // What each top-level symbol names, once.
  std::map<std::string, std::set<std::string>> references;
  std::map<std::string, std::vector<std::string>> tokensOf;
  for (const ptx::TopLevel &item : module.items) {
    if (item.kind == ptx::TopLevel::Kind::Function) {
      std::set<std::string> &names = references[item.function.name];
      std::vector<std::string> &tokens = tokensOf[item.function.name];
      if (item.function.hasBody) collectStatements(item.function.body, names, &tokens);
    } else if (item.kind == ptx::TopLevel::Kind::Variable) {
      collectInitializerNames(item.variable.initializer, references[item.variable.name]);
    }
  }

  // Debug PTX (-G: `.target sm_NN, debug`) must keep its DWARF, which ties
  // every function together: such a row keeps the whole module.
  bool debug = false;
  for (const std::string &target : module.targets) debug = debug || target == "debug";
  const std::string wholeModule = debug ? ptx::print(module) : std::string();

  std::vector<EntryModule> out;
  for (const ptx::TopLevel &root : module.items) {
    if (root.kind != ptx::TopLevel::Kind::Function || !root.function.isEntry || !root.function.hasBody) continue;
    std::set<std::string> kept{root.function.name};
    std::vector<std::string> stack{root.function.name};
    while (!stack.empty()) {
      std::string name = std::move(stack.back());
      stack.pop_back();
      auto found = references.find(name);
      if (found == references.end()) continue;
      for (const std::string &referenced : found->second)
        if (references.count(referenced) && kept.insert(referenced).second) stack.push_back(referenced);
    }

    ptx::Module single;
    single.version = module.version;
    single.targets = module.targets;
    single.hasTarget = module.hasTarget;
    single.addressSize = module.addressSize;
    EntryModule entry;
    entry.entry = root.function.name;
    entry.parameterCount = static_cast<int>(root.function.params.size());
    for (const ptx::TopLevel &item : module.items) {
      switch (item.kind) {
      case ptx::TopLevel::Kind::Directive:
        if (!isDroppableDwarfSection(item.directive)) single.items.push_back(item);
        break;
      case ptx::TopLevel::Kind::Variable:
        if (kept.count(item.variable.name)) single.items.push_back(item);
        break;
      case ptx::TopLevel::Kind::Function:
        // Another kernel is never part of this one, even if it names it.
        if (kept.count(item.function.name) && (!item.function.isEntry || item.function.name == entry.entry))
          single.items.push_back(item);
        break;
      }
    }
    // The entry's tokens, then its callees' in module order.
    entry.instructionTokens = tokensOf[entry.entry];
    for (const ptx::TopLevel &item : module.items)
      if (item.kind == ptx::TopLevel::Kind::Function && !item.function.isEntry && item.function.hasBody &&
          kept.count(item.function.name)) {
        const std::vector<std::string> &tokens = tokensOf[item.function.name];
        entry.instructionTokens.insert(entry.instructionTokens.end(), tokens.begin(), tokens.end());
      }
    entry.ptx = debug ? wholeModule : ptx::print(single);
    out.push_back(std::move(entry));
  }
  return out;
}

} // namespace ptxforge::corpus

// The PTX printer. Output follows nvcc's layout so that a diff against nvcc's
// PTX shows only what differs in substance.
#include "ptx/Printer.h"

#include <cstdint>

namespace ptxforge::ptx {

namespace {

void appendDims(std::string &out, const VariableDecl &variable) {
  if (variable.rangeCount) out += '<' + std::to_string(*variable.rangeCount) + '>';
  for (uint64_t dim : variable.arrayDims) out += dim ? '[' + std::to_string(dim) + ']' : std::string("[]");
}

std::string printDirective(const Directive &directive) {
  std::string out = "." + directive.name;
  if (!directive.text.empty()) out += (directive.name == "loc" || directive.name == "file" ? "\t" : " ") + directive.text;
  // .loc/.file end at the end of the line; .section carries its own braces.
  if (directive.name != "loc" && directive.name != "file" && directive.name != "section") out += ';';
  return out;
}

void printStatements(std::string &out, const std::vector<Statement> &statements, int depth) {
  std::string indent(static_cast<size_t>(depth), '\t');
  for (const Statement &statement : statements) {
    switch (statement.kind) {
    case Statement::Kind::Instruction:
      out += indent + printInstruction(statement.instruction) + ";\n";
      break;
    case Statement::Kind::Label:
      out += statement.label.name + ":\n";
      break;
    case Statement::Kind::Variable:
      out += indent + printVariable(statement.variable) + ";\n";
      break;
    case Statement::Kind::Directive:
      out += indent + printDirective(statement.directive) + "\n";
      break;
    case Statement::Kind::Block:
      out += indent + "{\n";
      printStatements(out, statement.block.statements, depth + 1);
      out += indent + "}\n";
      break;
    }
  }
}

void printParams(std::string &out, const std::vector<VariableDecl> &params) {
  out += "(\n";
  for (size_t i = 0; i < params.size(); ++i) {
    out += "\t" + printVariable(params[i]);
    out += i + 1 < params.size() ? ",\n" : "\n";
  }
  out += ")";
}

void printFunction(std::string &out, const Function &function) {
  if (!function.linkage.empty()) out += "." + function.linkage + " ";
  out += function.isEntry ? ".entry " : ".func ";
  if (!function.returnParams.empty()) {
    out += "(";
    for (size_t i = 0; i < function.returnParams.size(); ++i)
      out += (i ? ", " : "") + printVariable(function.returnParams[i]);
    out += ") ";
  }
  out += function.name;
  if (!function.params.empty() || function.isEntry) printParams(out, function.params);
  if (!function.hasBody && function.tuning.empty()) {
    out += ";\n";
    return;
  }
  out += "\n";
  for (const TuningDirective &tuning : function.tuning) {
    out += "." + tuning.name;
    for (size_t i = 0; i < tuning.values.size(); ++i) out += (i ? ", " : " ") + tuning.values[i];
    if (tuning.name == "pragma") out += ";";
    out += "\n";
  }
  if (!function.hasBody) {
    out += ";\n";
    return;
  }
  out += "{\n";
  printStatements(out, function.body, 1);
  out += "}\n";
}

} // namespace

std::string printOperand(const Operand &operand) {
  switch (operand.kind) {
  case Operand::Kind::Name: return (operand.negated ? "!" : operand.minus ? "-" : "") + operand.name;
  case Operand::Kind::Sink: return "_";
  case Operand::Kind::Integer:
  case Operand::Kind::Float: return operand.text;
  case Operand::Kind::SymbolExpr:
    return operand.name + (operand.intValue < 0 ? "-" + std::to_string(-static_cast<uint64_t>(operand.intValue))
                                                : "+" + std::to_string(operand.intValue));
  case Operand::Kind::Address: {
    std::string out = "[" + operand.name;
    if (operand.name.empty())
      out += std::to_string(operand.intValue);
    else if (operand.intValue != 0)
      out += "+" + std::to_string(operand.intValue); // nvcc's `+-8` for negatives
    if (!operand.elements.empty()) out += ", " + printOperand(operand.elements.front());
    return out + "]";
  }
  case Operand::Kind::Vector:
  case Operand::Kind::List: {
    std::string out = operand.kind == Operand::Kind::Vector ? "{" : "(";
    for (size_t i = 0; i < operand.elements.size(); ++i) out += (i ? ", " : "") + printOperand(operand.elements[i]);
    return out + (operand.kind == Operand::Kind::Vector ? "}" : ")");
  }
  case Operand::Kind::Pair:
    return printOperand(operand.elements.at(0)) + "|" + printOperand(operand.elements.at(1));
  }
  return {};
}

std::string printInstruction(const Instruction &instruction) {
  std::string out;
  if (!instruction.guard.empty()) out += std::string("@") + (instruction.guardNegated ? "!" : "") + instruction.guard + " ";
  out += instruction.opcode;
  for (const std::string &modifier : instruction.modifiers) out += "." + modifier;
  for (size_t i = 0; i < instruction.operands.size(); ++i)
    out += (i ? ", " : " \t") + printOperand(instruction.operands[i]);
  return out;
}

std::string printVariable(const VariableDecl &variable) {
  std::string out;
  if (!variable.linkage.empty()) {
    // `attribute(...)` rides in the linkage string (see the parser).
    std::string linkage = variable.linkage;
    size_t attribute = linkage.find("attribute");
    std::string attributeText;
    if (attribute != std::string::npos) {
      attributeText = "." + linkage.substr(attribute);
      linkage = linkage.substr(0, attribute);
      while (!linkage.empty() && linkage.back() == ' ') linkage.pop_back();
    }
    if (!linkage.empty()) out += "." + linkage + " ";
    out += std::string(".") + stateSpaceName(variable.space);
    if (!variable.spaceQualifier.empty()) out += "::" + variable.spaceQualifier;
    if (!attributeText.empty()) out += " " + attributeText;
  } else {
    out += std::string(".") + stateSpaceName(variable.space);
    if (!variable.spaceQualifier.empty()) out += "::" + variable.spaceQualifier;
  }
  if (variable.align) out += " .align " + std::to_string(variable.align);
  if (variable.vectorWidth) out += " .v" + std::to_string(variable.vectorWidth);
  out += " ." + variable.type;
  if (variable.isPtr) {
    out += " .ptr";
    if (!variable.ptrSpace.empty()) out += "." + variable.ptrSpace;
    if (variable.ptrAlign) out += ".align " + std::to_string(variable.ptrAlign);
  }
  out += (variable.space == StateSpace::Reg ? " \t" : " ") + variable.name;
  appendDims(out, variable);
  if (!variable.initializer.empty()) out += " = " + variable.initializer;
  return out;
}

std::string print(const Module &module) {
  std::string out;
  if (module.version) out += ".version " + std::to_string(module.version->first) + "." + std::to_string(module.version->second) + "\n";
  if (module.hasTarget) {
    out += ".target ";
    for (size_t i = 0; i < module.targets.size(); ++i) out += (i ? ", " : "") + module.targets[i];
    out += "\n";
  }
  if (module.addressSize) out += ".address_size " + std::to_string(module.addressSize) + "\n";
  for (const TopLevel &item : module.items) {
    out += "\n";
    switch (item.kind) {
    case TopLevel::Kind::Function: printFunction(out, item.function); break;
    case TopLevel::Kind::Variable: out += printVariable(item.variable) + ";\n"; break;
    case TopLevel::Kind::Directive: out += printDirective(item.directive) + "\n"; break;
    }
  }
  return out;
}

} // namespace ptxforge::ptx

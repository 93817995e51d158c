// The PTX grammar for constrained decoding (see Grammar.h): built once as
// rules over literals and character classes from the instruction table, then
// rendered as GBNF (llama.cpp), Lark (llguidance) or EBNF (xgrammar).
//
// Shape of the rules, and why:
// - every `ws` between tokens is written out (no `%ignore`), so that GBNF,
//   which has no lexer, and Lark accept the same texts; `ws` covers blanks
//   and both kinds of comment, so launch directives in comments pass;
// - lists put optional whitespace after each element (`item S ("," S item S)*`),
//   never two optional blanks side by side: llama.cpp keeps one parse stack
//   per ambiguity, and `S S` would double them at every blank;
// - no `{m,n}` repetitions (GBNF and xgrammar read them differently from
//   Lark) and no `-` or `^` inside character classes (each format escapes
//   them its own way);
// - an opcode's mnemonic is one token (`add` then any `.modifier` its entry
//   accepts), so Lark lexes it as one lexeme and no blank can enter it.
#include "ptx/Grammar.h"

#include "ptx/Ast.h"
#include "ptx/InstructionTable.h"

#include <algorithm>
#include <cassert>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace ptxforge::ptx {

namespace {

// ---------------------------------------------------------------------------
// The rules, independent of any format
// ---------------------------------------------------------------------------

struct Node {
  enum class Kind { Literal, Class, Ref, Seq, Alt, Opt, Star, Plus };
  Kind kind = Kind::Literal;
  std::string text;                         ///< Literal: the text; Ref: the rule
  std::vector<std::pair<char, char>> ranges; ///< Class: inclusive ranges
  bool negated = false;                     ///< Class: [^…]
  std::vector<Node> items;                  ///< Seq, Alt; one item for Opt/Star/Plus
};

Node lit(std::string text) {
  Node n;
  n.kind = Node::Kind::Literal;
  n.text = std::move(text);
  return n;
}

/// A character class from a spec such as "a-zA-Z0-9_$" (`x-y` is a range).
Node cls(std::string_view spec, bool negated = false) {
  Node n;
  n.kind = Node::Kind::Class;
  n.negated = negated;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (i + 2 < spec.size() && spec[i + 1] == '-') {
      n.ranges.emplace_back(spec[i], spec[i + 2]);
      i += 2;
    } else {
      n.ranges.emplace_back(spec[i], spec[i]);
    }
  }
  return n;
}
Node notCls(std::string_view spec) { return cls(spec, true); }

Node ref(std::string name) {
  Node n;
  n.kind = Node::Kind::Ref;
  n.text = std::move(name);
  return n;
}

Node group(Node::Kind kind, std::vector<Node> items) {
  if (items.size() == 1 && (kind == Node::Kind::Seq || kind == Node::Kind::Alt)) return std::move(items[0]);
  Node n;
  n.kind = kind;
  n.items = std::move(items);
  return n;
}
Node seq(std::vector<Node> items) { return group(Node::Kind::Seq, std::move(items)); }
Node alt(std::vector<Node> items) { return group(Node::Kind::Alt, std::move(items)); }
Node opt(Node item) { return group(Node::Kind::Opt, {std::move(item)}); }
Node star(Node item) { return group(Node::Kind::Star, {std::move(item)}); }
Node plus(Node item) { return group(Node::Kind::Plus, {std::move(item)}); }

Node alts(const std::vector<std::string> &literals) {
  std::vector<Node> items;
  for (const std::string &l : literals) items.push_back(lit(l));
  return alt(std::move(items));
}

struct Rule {
  std::string name;
  bool token = false; ///< holds no whitespace: a Lark terminal
  Node body;
  std::string comment;
};

// ---------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------

std::string escapeLiteral(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '\\': out += "\\\\"; break;
    case '"': out += "\\\""; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default: out += c;
    }
  }
  return out + "\"";
}

std::string escapeClassChar(char c, GrammarFormat format) {
  switch (c) {
  case '\\': return "\\\\";
  case ']': return "\\]";
  case '[': return "\\[";
  case '\n': return "\\n";
  case '\t': return "\\t";
  case '\r': return "\\r";
  default: break;
  }
  // In a Lark /regex/, `/` ends the regex; `^` and `-` are never written
  // (see the banner), so nothing else needs a backslash.
  if (format == GrammarFormat::Lark && c == '/') return "\\/";
  return std::string(1, c);
}

class Renderer {
public:
  Renderer(GrammarFormat format, const std::vector<Rule> &rules) : format_(format) {
    for (const Rule &r : rules) tokens_[r.name] = r.token;
  }

  std::string name(const std::string &rule) const {
    if (format_ != GrammarFormat::Lark) return rule;
    std::string out = rule;
    bool token = tokens_.count(rule) && tokens_.at(rule);
    for (char &c : out) {
      if (c == '-') c = '_';
      else if (token) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
  }

  std::string render(const Node &n) const {
    switch (n.kind) {
    case Node::Kind::Literal: return escapeLiteral(n.text);
    case Node::Kind::Class: {
      std::string body = n.negated ? "[^" : "[";
      for (const auto &[lo, hi] : n.ranges) {
        body += escapeClassChar(lo, format_);
        if (hi != lo) body += "-" + escapeClassChar(hi, format_);
      }
      body += "]";
      return format_ == GrammarFormat::Lark ? "/" + body + "/" : body;
    }
    case Node::Kind::Ref: return name(n.text);
    case Node::Kind::Seq: {
      std::string out;
      for (const Node &item : n.items) {
        std::string part = render(item);
        if (item.kind == Node::Kind::Alt) part = "(" + part + ")";
        out += (out.empty() ? "" : " ") + part;
      }
      return out;
    }
    case Node::Kind::Alt: {
      std::string out;
      for (const Node &item : n.items) out += (out.empty() ? "" : " | ") + render(item);
      return out;
    }
    case Node::Kind::Opt:
    case Node::Kind::Star:
    case Node::Kind::Plus: {
      const Node &item = n.items[0];
      std::string part = render(item);
      bool atomic = item.kind == Node::Kind::Literal || item.kind == Node::Kind::Class || item.kind == Node::Kind::Ref;
      if (!atomic) part = "(" + part + ")";
      return part + (n.kind == Node::Kind::Opt ? "?" : n.kind == Node::Kind::Star ? "*" : "+");
    }
    }
    return {};
  }

private:
  GrammarFormat format_;
  std::unordered_map<std::string, bool> tokens_;
};

std::string renderGrammar(GrammarFormat format, const std::vector<Rule> &rules, const std::string &header) {
  Renderer renderer(format, rules);
  // GBNF and xgrammar comment with `#`; llguidance's Lark takes `//` and `#`.
  std::string comment = format == GrammarFormat::Lark ? "// " : "# ";
  std::string out;
  size_t start = 0;
  while (start < header.size()) {
    size_t end = header.find('\n', start);
    if (end == std::string::npos) end = header.size();
    out += comment + header.substr(start, end - start) + "\n";
    start = end + 1;
  }
  out += "\n";
  // `%llguidance {}` marks the text as llguidance's Lark (SGLang asks for it
  // with --grammar-backend llguidance); `start` is Lark's start rule.
  if (format == GrammarFormat::Lark) out += "%llguidance {}\n\nstart: root\n";
  for (const Rule &r : rules) {
    if (!r.comment.empty()) out += "\n" + comment + r.comment + "\n";
    // One rule per line: GBNF ends a rule at a newline outside a group.
    out += renderer.name(r.name) + (format == GrammarFormat::Lark ? ": " : " ::= ") + renderer.render(r.body) + "\n";
  }
  return out;
}

// ---------------------------------------------------------------------------
// Operand counts (the lint's `operand-count` table; tests/guided holds the two together)
// ---------------------------------------------------------------------------

const std::map<std::string, std::pair<size_t, size_t>, std::less<>> &operandCounts() {
  static const std::map<std::string, std::pair<size_t, size_t>, std::less<>> counts = {
      {"add", {3, 3}},   {"sub", {3, 3}},   {"addc", {3, 3}},   {"subc", {3, 3}},     {"mul", {3, 3}},
      {"div", {3, 3}},   {"rem", {3, 3}},   {"and", {3, 3}},    {"or", {3, 3}},       {"xor", {3, 3}},
      {"shl", {3, 3}},   {"shr", {3, 3}},   {"copysign", {3, 3}}, {"mul24", {3, 3}},  {"min", {3, 4}},
      {"max", {3, 4}},   {"setp", {3, 4}},  {"set", {3, 4}},    {"abs", {2, 2}},      {"neg", {2, 2}},
      {"not", {2, 2}},   {"cnot", {2, 2}},  {"popc", {2, 2}},   {"clz", {2, 2}},      {"brev", {2, 2}},
      {"bfind", {2, 2}}, {"rcp", {2, 2}},   {"sqrt", {2, 2}},   {"rsqrt", {2, 2}},    {"sin", {2, 2}},
      {"cos", {2, 2}},   {"lg2", {2, 2}},   {"ex2", {2, 2}},    {"tanh", {2, 2}},     {"mov", {2, 2}},
      {"cvta", {2, 2}},  {"testp", {2, 2}}, {"isspacep", {2, 2}}, {"mad", {4, 4}},    {"fma", {4, 4}},
      {"mad24", {4, 4}}, {"sad", {4, 4}},   {"madc", {4, 4}},   {"bfe", {4, 4}},      {"selp", {4, 4}},
      {"slct", {4, 4}},  {"prmt", {4, 4}},  {"shf", {4, 4}},    {"bfi", {5, 5}},      {"lop3", {5, 6}},
      {"cvt", {2, 4}},   {"ld", {2, 4}},    {"ldu", {2, 2}},    {"st", {2, 4}},       {"bra", {1, 1}},
      {"exit", {0, 0}},  {"ret", {0, 0}},   {"trap", {0, 0}},
  };
  return counts;
}

/// Where an opcode's operands must be addresses: ld's and ldu's second, st's first.
enum class OperandLayout { Any, LoadLike, StoreLike };

OperandLayout layoutOf(std::string_view opcode) {
  if (opcode == "ld" || opcode == "ldu") return OperandLayout::LoadLike;
  if (opcode == "st") return OperandLayout::StoreLike;
  return OperandLayout::Any;
}

// ---------------------------------------------------------------------------
// The PTX rules
// ---------------------------------------------------------------------------

bool isPtxName(std::string_view name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_' || name[0] == '$'))
    return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; });
}

/// A rule name of letters, digits and `-` (GBNF allows nothing else).
std::string ruleName(std::string_view prefix, std::string_view text) {
  std::string out(prefix);
  for (char c : text) out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return out;
}

class Builder {
public:
  explicit Builder(const GrammarOptions &options) : options_(options) {}

  Result<std::vector<Rule>> build() {
    if (!options_.arch.empty()) {
      targetSm_ = targetSmNumber(options_.arch);
      if (targetSm_ == 0 || minPtxForTarget(options_.arch) == 0 || options_.arch.rfind("sm_", 0) != 0)
        return makeError(ErrorKind::InvalidInput, "unknown-target",
                         "unknown target '" + options_.arch + "' (expected a name such as sm_80, sm_90 or sm_90a)");
      targetArch_ = targetIsArchSpecific(options_.arch);
      targetFamily_ = targetIsFamilySpecific(options_.arch);
    }
    if (options_.entry) {
      if (!isPtxName(options_.entry->kernel))
        return makeError(ErrorKind::InvalidInput, "invalid-kernel-name",
                         "kernel name '" + options_.entry->kernel + "' is not a PTX identifier");
      for (const std::string &type : options_.entry->paramTypes)
        if (!typeInfo(type) || type == "pred")
          return makeError(ErrorKind::InvalidInput, "invalid-param-type",
                           "parameter type '" + type + "' is not a PTX data type");
    }
    lexical();
    instructions();
    statements();
    module();
    return std::move(rules_);
  }

private:
  void add(std::string name, Node body, bool token, std::string comment = {}) {
    rules_.push_back(Rule{std::move(name), token, std::move(body), std::move(comment)});
  }
  void token(std::string name, Node body, std::string comment = {}) {
    add(std::move(name), std::move(body), true, std::move(comment));
  }
  void rule(std::string name, Node body, std::string comment = {}) {
    add(std::move(name), std::move(body), false, std::move(comment));
  }

  static Node S() { return opt(ref("ws")); } ///< optional blanks and comments
  static Node W() { return ref("ws"); }      ///< required

  /// `item S ("," S item S)*` with between `min` and `max` items (max 0: unbounded).
  static Node list(const Node &item, size_t min, size_t max) {
    auto next = [&] { return seq({lit(","), S(), item, S()}); };
    if (min == 0) return opt(list(item, 1, max));
    std::vector<Node> parts = {item, S()};
    for (size_t i = 1; i < min; ++i) parts.push_back(next());
    if (max == 0) {
      parts.push_back(star(next()));
    } else {
      // Nested optionals, not `x? x?`: each count has one parse.
      Node tail;
      bool haveTail = false;
      for (size_t i = max; i > min; --i) {
        Node step = haveTail ? seq({lit(","), S(), item, S(), tail}) : next();
        tail = opt(step);
        haveTail = true;
      }
      if (haveTail) parts.push_back(tail);
    }
    return seq(std::move(parts));
  }

  void lexical() {
    Node blockComment = seq({lit("/*"), star(alt({notCls("*"), seq({plus(lit("*")), notCls("*/")})})), plus(lit("*")),
                             lit("/")});
    Node piece = alt({cls(" \t\r\n"), seq({lit("//"), star(notCls("\n"))}), blockComment});
    if (options_.format == GrammarFormat::Lark) {
      token("ws", plus(piece), "Blanks and comments (launch directives live in comments).");
    } else {
      // A recursive rule, not `piece+`: tools that turn GBNF into Lark
      // (llguidance's gbnf_to_lark, which llama.cpp and vLLM use) make every
      // rule built of terminals a terminal, and a terminal holding blanks in
      // its middle (`atom ws? "+"`) would swallow the blank after a complete
      // operand and fail at the comma. A rule that refers to itself stays a rule.
      token("ws-piece", piece, "Blanks and comments (launch directives live in comments).");
      rule("ws", seq({ref("ws-piece"), opt(ref("ws"))}));
    }
    token("digits", plus(cls("0-9")));
    token("ident", seq({cls("a-zA-Z_$%"), star(cls("a-zA-Z0-9_$"))}),
          "Names: registers (%r1), labels ($L__BB0_1), symbols; `.x`-style components only in operands.");
    token("name", seq({ref("ident"), star(seq({lit("."), plus(cls("a-zA-Z0-9_"))}))}));
    Node hex = cls("0-9a-fA-F");
    std::vector<Node> hex8(8, hex), hex16(16, hex);
    Node f32 = seq({lit("0"), cls("fF")});
    for (const Node &h : hex8) f32.items.push_back(h);
    Node f64 = seq({lit("0"), cls("dD")});
    for (const Node &h : hex16) f64.items.push_back(h);
    Node decimal = seq({ref("digits"), lit("."), star(cls("0-9")),
                        opt(seq({cls("eE"), opt(alt({lit("+"), lit("-")})), ref("digits")}))});
    Node integer = seq({alt({seq({lit("0"), cls("xX"), plus(hex)}), seq({lit("0"), cls("bB"), plus(cls("01"))}),
                             ref("digits")}),
                        opt(lit("U"))});
    token("uint", integer);
    token("imm", seq({opt(lit("-")), alt({f32, f64, decimal, ref("uint")})}),
          "Immediates: 42, -1, 0xFF, 0f3F800000 (f32 bits), 0d3FF0000000000000 (f64 bits), 1.5.");
    Node escape = seq({lit("\\"), notCls("\n")});
    token("string", seq({lit("\""), star(alt({notCls("\"\\\n"), escape})), lit("\"")}));
  }

  bool gateMet(const ArchGate &gate) const {
    return targetSm_ == 0 || targetMeetsGate(gate, targetSm_, targetArch_, targetFamily_);
  }

  /// The modifiers an entry accepts on the target, as grammar alternatives.
  std::optional<Node> modifierNode(const OpcodeEntry &entry) const {
    if (entry.anyModifier)
      return seq({plus(cls("a-zA-Z0-9_")), star(seq({lit("::"), plus(cls("a-zA-Z0-9_"))}))});
    std::vector<std::string> nameParts;
    for (size_t start = 0, dot; start <= entry.name.size(); start = dot + 1) {
      dot = entry.name.find('.', start);
      if (dot == std::string::npos) dot = entry.name.size();
      nameParts.push_back(entry.name.substr(start, dot - start));
    }
    std::vector<std::string> afterName(nameParts.begin() + 1, nameParts.end());
    std::vector<Node> options;
    std::set<std::string> seen;
    for (const char *slot : {"type", "comparison", "rounding mode", "boolean operation", "operation", "state space",
                             "cache operator", "memory ordering", "scope", "vector width", "cache eviction", "layout",
                             "shuffle mode", "vote mode", "width", "precision", "shape", "dimension", "modifier"}) {
      for (const std::string &m : validModifiersInSlot(entry, slot)) {
        if (!seen.insert(m).second) continue;
        if (m == "mMnNkK") {
          options.push_back(seq({lit("m"), ref("digits"), lit("n"), ref("digits"), lit("k"), ref("digits")}));
        } else if (m == "1d..5d") {
          options.push_back(seq({cls("1-5"), lit("d")}));
        } else if (m.back() == '*') {
          // `tile::*`: the prefix, then a name.
          options.push_back(seq({lit(m.substr(0, m.size() - 1)), plus(cls("a-zA-Z0-9_"))}));
        } else {
          if (targetSm_) {
            std::vector<std::string> chain = afterName;
            chain.push_back(m);
            OpcodeMatch match{&entry, afterName.size()};
            bool ok = true;
            for (const Requirement &req : instructionRequirements(match, chain)) ok = ok && gateMet(req.gate);
            if (!ok) continue;
          }
          options.push_back(lit(m));
        }
      }
    }
    if (options.empty()) return std::nullopt;
    // Longest first, so that a reader of the grammar sees `s16x2` before `s16`
    // (the matchers do not care: they try every alternative).
    auto length = [](const Node &n) { return n.kind == Node::Kind::Literal ? n.text.size() : 0; };
    std::stable_sort(options.begin(), options.end(),
                     [&](const Node &a, const Node &b) { return length(a) > length(b); });
    return alt(std::move(options));
  }

  void instructions() {
    // One mnemonic token per table entry: its dotted name, then any modifier it accepts.
    struct Shape {
      size_t min = 0, max = 0;
      bool counted = false;
      OperandLayout layout = OperandLayout::Any;
      bool label = false;
      bool operator<(const Shape &o) const {
        return std::tie(min, max, counted, layout, label) < std::tie(o.min, o.max, o.counted, o.layout, o.label);
      }
    };
    std::map<Shape, std::vector<std::string>> byShape;
    std::set<std::string> names;
    for (const OpcodeEntry &entry : allInstructions()) {
      if (!gateMet(entry.gate)) continue;
      std::string base = ruleName("mn-", entry.name);
      std::string name = base;
      for (int i = 2; !names.insert(name).second; ++i) name = base + "-" + std::to_string(i);
      std::optional<Node> modifiers = modifierNode(entry);
      Node mnemonic = lit(entry.name);
      if (modifiers) {
        token("mod-" + name.substr(3), *modifiers);
        mnemonic = seq({lit(entry.name), star(seq({lit("."), ref("mod-" + name.substr(3))}))});
      }
      token(name, mnemonic);
      Shape shape;
      if (auto count = grammarOperandCount(entry.name)) {
        shape.counted = true;
        shape.min = count->first;
        shape.max = count->second;
        shape.layout = layoutOf(entry.name);
        shape.label = entry.name == "bra";
      }
      byShape[shape].push_back(name);
    }

    rule("operand", alt({seq({ref("atom"), opt(seq({S(), lit("|"), S(), ref("atom")}))}), ref("address"),
                          ref("vector"), ref("paren-list")}),
         "Operands: registers and symbols (with `!` or `-`), immediates, `d|p` pairs, [addresses], {vectors}, (lists).");
    token("opname", seq({opt(alt({lit("!"), lit("-")})), ref("name")}));
    rule("atom", alt({seq({ref("opname"), opt(seq({S(), lit("+"), S(), ref("imm")}))}), ref("imm")}));
    rule("address", seq({lit("["), S(),
                         alt({seq({alt({ref("opname"), ref("imm")}), S(),
                                   opt(seq({alt({lit("+"), lit("-")}), S(), ref("imm"), S()}))}),
                              seq({ref("opname"), S(), lit(","), S(), ref("vector"), S()})}),
                         lit("]")}));
    rule("vector", seq({lit("{"), S(), list(ref("atom"), 1, 0), lit("}")}));
    rule("paren-list", seq({lit("("), S(), list(ref("operand"), 0, 0), lit(")")}));

    std::vector<Node> shapes;
    size_t index = 0;
    for (const auto &[shape, mnemonics] : byShape) {
      std::vector<Node> refs;
      for (const std::string &m : mnemonics) refs.push_back(ref(m));
      Node head = alt(std::move(refs));
      Node operands;
      if (!shape.counted) {
        operands = alt({seq({W(), list(ref("operand"), 1, 0)}), S()});
      } else if (shape.max == 0) {
        operands = S();
      } else if (shape.label) {
        operands = seq({W(), ref("ident"), S()});
      } else if (shape.layout == OperandLayout::LoadLike) {
        // ld d, [a] (, policy…): the second operand is an address.
        std::vector<Node> parts = {W(), ref("operand"), S(), lit(","), S(), ref("address"), S()};
        if (shape.max > 2) parts.push_back(opt(seq({lit(","), S(), list(ref("operand"), 1, shape.max - 2)})));
        operands = seq(std::move(parts));
      } else if (shape.layout == OperandLayout::StoreLike) {
        std::vector<Node> parts = {W(), ref("address"), S(), lit(","), S(), list(ref("operand"), 1, shape.max - 1)};
        operands = seq(std::move(parts));
      } else {
        operands = seq({W(), list(ref("operand"), shape.min, shape.max)});
      }
      std::string name = "shape-" + std::to_string(index++);
      std::string what = !shape.counted ? "any operands"
                         : shape.min == shape.max
                             ? std::to_string(shape.min) + " operand" + (shape.min == 1 ? "" : "s")
                             : std::to_string(shape.min) + " to " + std::to_string(shape.max) + " operands";
      rule(name, seq({head, operands}), "Opcodes with " + what + ".");
      shapes.push_back(ref(name));
    }
    token("guard", seq({lit("@"), opt(lit("!")), ref("ident")}));
    rule("instruction", seq({opt(seq({ref("guard"), W()})), alt(std::move(shapes)), lit(";")}),
         "An instruction: an optional guard, a mnemonic, its operands.");
  }

  void statements() {
    std::set<std::string> types = {"pred"};
    for (const OpcodeEntry &entry : allInstructions())
      for (const std::string &t : validModifiersInSlot(entry, "type")) types.insert(t);
    std::vector<std::string> words(types.begin(), types.end());
    for (const char *w : {"v2", "v4", "v8", "ptr", "texref", "samplerref", "surfref", "global", "shared", "const",
                          "local"})
      words.push_back(w);
    std::stable_sort(words.begin(), words.end(), [](const auto &a, const auto &b) { return a.size() > b.size(); });
    token("decl-word", seq({lit("."), alts(words)}),
          "Declarations: `.reg .b32 %r<5>;`, `.shared .align 16 .b8 tile[4096];`, `.global .f32 x = 0f00000000;`.");
    token("linkage", alts({".extern", ".visible", ".weak", ".common"}));
    token("space", alts({".reg", ".local", ".shared", ".global", ".const", ".param", ".tex"}));
    rule("decl-attr", alt({ref("decl-word"), seq({lit(".align"), W(), ref("uint")})}));
    rule("declarator", seq({ref("ident"), opt(seq({lit("<"), ref("uint"), lit(">")})),
                            star(seq({lit("["), opt(ref("uint")), lit("]")}))}));
    rule("init-value",
         alt({seq({lit("{"), S(), list(ref("init-value"), 1, 0), lit("}")}), ref("imm"),
              seq({lit("generic("), S(), ref("ident"), S(), lit(")"), opt(seq({S(), lit("+"), S(), ref("uint")}))}),
              seq({ref("ident"), opt(seq({S(), lit("+"), S(), ref("uint")}))})}));
    rule("variable", seq({star(seq({ref("linkage"), W()})), ref("space"), star(seq({S(), ref("decl-attr")})), W(),
                          list(ref("declarator"), 1, 0), opt(seq({lit("="), S(), ref("init-value"), S()})),
                          lit(";")}));
    token("loc", seq({lit(".loc"), plus(cls(" \t")), star(notCls("\n"))}), "Debug directives, to the end of the line.");
    token("file", seq({lit(".file"), plus(cls(" \t")), star(notCls("\n"))}));
    token("section", seq({lit(".section"), plus(cls(" \t")), lit("."), plus(cls("a-zA-Z0-9_")), star(cls(" \t\r\n")),
                          lit("{"), star(notCls("}")), lit("}")}));
    rule("pragma", seq({lit(".pragma"), W(), list(ref("string"), 1, 0), lit(";")}));
    token("label", seq({ref("ident"), lit(":")}));
    // The kind and the rest are one token: a separate `[^;]*` would match the
    // same blanks as `ws` at the same place.
    token("prototype-tail", seq({alts({".callprototype", ".calltargets", ".branchtargets"}), star(notCls(";")),
                                 lit(";")}));
    rule("prototype", seq({alt({seq({ref("ident"), S(), lit(":")}), ref("label")}), S(), ref("prototype-tail")}),
         "`prototype_0 : .callprototype (.param .b32 _) _ (.param .b64 _);` and target lists.");
    rule("statement", alt({ref("instruction"), ref("label"), ref("variable"), ref("loc"), ref("pragma"), ref("block"),
                           ref("prototype")}));
    rule("block", seq({lit("{"), S(), star(seq({ref("statement"), S()})), lit("}")}));
  }

  void module() {
    rule("param", seq({alt({lit(".param"), lit(".reg")}), star(seq({S(), ref("decl-attr")})), W(), ref("declarator")}));
    rule("params", seq({lit("("), S(), list(ref("param"), 0, 0), lit(")")}));
    token("tuning-name", alts({".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".reqnctapercluster",
                               ".maxclusterrank", ".explicitcluster", ".noreturn"}));
    rule("tuning", seq({ref("tuning-name"), opt(seq({W(), list(ref("uint"), 1, 0)}))}));
    rule("func", seq({star(seq({ref("linkage"), W()})), lit(".func"),
                      alt({seq({S(), ref("params"), S()}), W()}), ref("ident"), S(), opt(seq({ref("params"), S()})),
                      star(seq({ref("tuning"), S()})), alt({ref("block"), lit(";")})}),
         "Functions: `.func`, and `.entry` kernels.");

    Node target;
    if (!options_.arch.empty()) {
      target = lit(options_.arch);
    } else {
      target = alt({seq({alt({lit("sm_"), lit("compute_")}), ref("digits"), opt(cls("af"))}),
                    lit("texmode_independent"), lit("texmode_unified"), lit("map_f64_to_f32"), lit("debug")});
    }
    token("target", target);
    token("version", seq({ref("digits"), lit("."), ref("digits")}));
    rule("header", seq({lit(".version"), W(), ref("version"), W(), lit(".target"), W(), list(ref("target"), 1, 0),
                        lit(".address_size"), W(), alts({"64", "32"})}),
         "The module: `.version`, `.target`, `.address_size`, then functions, variables and directives.");
    std::vector<Node> items = {ref("func"), ref("variable"), ref("file"), ref("section"), ref("pragma")};
    if (!options_.entry) {
      rule("entry", seq({star(seq({ref("linkage"), W()})), lit(".entry"), W(), ref("ident"), S(), ref("params"), S(),
                         star(seq({ref("tuning"), S()})), alt({ref("block"), lit(";")})}));
      items.insert(items.begin(), ref("entry"));
      rule("item", alt(std::move(items)));
      rule("root", seq({S(), ref("header"), S(), star(seq({ref("item"), S()}))}));
      return;
    }
    // The task's kernel, once, with its parameters as the prompt gives them.
    const EntrySignature &sig = *options_.entry;
    std::vector<Node> params = {lit("("), S()};
    for (size_t i = 0; i < sig.paramTypes.size(); ++i) {
      if (i) params.insert(params.end(), {lit(","), S()});
      const uint32_t align = i < sig.paramAligns.size() ? sig.paramAligns[i] : 0;
      const uint64_t arrayBytes = i < sig.paramArrayBytes.size() ? sig.paramArrayBytes[i] : 0;
      const std::string name = sig.kernel + "_param_" + std::to_string(i);
      if (arrayBytes) {
        // A byte array with its alignment before the type, as nvcc writes it.
        params.insert(params.end(), {lit(".param"), W()});
        if (align) params.insert(params.end(), {lit(".align"), W(), lit(std::to_string(align)), W()});
        params.insert(params.end(), {lit("." + sig.paramTypes[i]), W(), lit(name), S(),
                                     lit("[" + std::to_string(arrayBytes) + "]"), S()});
        continue;
      }
      Node attr = alt({alts({".ptr", ".global", ".shared", ".const", ".local"}),
                       seq({lit(".align"), W(), ref("uint")})});
      params.insert(params.end(), {lit(".param"), W(), lit("." + sig.paramTypes[i]), star(seq({S(), attr})), W(),
                                   lit(name), S()});
    }
    params.push_back(lit(")"));
    rule("task-entry", seq({star(seq({ref("linkage"), W()})), lit(".entry"), W(), lit(sig.kernel), S(),
                            seq(std::move(params)), S(), star(seq({ref("tuning"), S()})), ref("block")}),
         "The task's kernel, with the signature of its prompt.");
    rule("item", alt(std::move(items)));
    rule("root", seq({S(), ref("header"), S(), star(seq({ref("item"), S()})), ref("task-entry"), S(),
                      star(seq({ref("item"), S()}))}));
  }

  GrammarOptions options_;
  uint32_t targetSm_ = 0;
  bool targetArch_ = false;
  bool targetFamily_ = false;
  std::vector<Rule> rules_;
};

} // namespace

const char *grammarFormatName(GrammarFormat format) {
  switch (format) {
  case GrammarFormat::Gbnf: return "gbnf";
  case GrammarFormat::Lark: return "lark";
  case GrammarFormat::Ebnf: return "ebnf";
  }
  return "gbnf";
}

std::optional<GrammarFormat> parseGrammarFormat(std::string_view name) {
  if (name == "gbnf") return GrammarFormat::Gbnf;
  if (name == "lark") return GrammarFormat::Lark;
  if (name == "ebnf") return GrammarFormat::Ebnf;
  return std::nullopt;
}

std::optional<std::pair<size_t, size_t>> grammarOperandCount(std::string_view opcode) {
  const auto &counts = operandCounts();
  auto it = counts.find(opcode);
  if (it == counts.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> grammarCountedOpcodes() {
  std::vector<std::string> out;
  for (const auto &[name, count] : operandCounts()) out.push_back(name);
  return out;
}

Result<std::string> generateGrammar(const GrammarOptions &options) {
  Result<std::vector<Rule>> rules = Builder(options).build();
  if (!rules) return rules.error();
  std::string header = "PTX grammar generated by `ptxforge grammar` from the instruction table (" +
                       std::string(grammarFormatName(options.format)) + ")";
  if (!options.arch.empty()) header += "\ntarget: " + options.arch + " (opcodes and modifiers it lacks are left out)";
  if (options.entry) header += "\nentry: " + options.entry->kernel + " (" + std::to_string(options.entry->paramTypes.size()) + " parameters)";
  header += "\nStart rule: " + std::string(options.format == GrammarFormat::Lark ? "start" : "root") +
            ". See docs/guided.md.";
  return renderGrammar(options.format, rules.value(), header);
}

} // namespace ptxforge::ptx

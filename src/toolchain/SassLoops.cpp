// SassLoops: basic blocks from the branch targets in nvdisasm's listing,
// dominators (Cooper, Harvey and Kennedy's iterative algorithm), natural
// loops from the back edges, their nesting, and the hot loop's mix.
//
// nvdisasm -json prints a branch target as the byte offset of the
// instruction inside its function ("BRA 0x590", "@!P0 BRA 0x3b0",
// "BRA P5,0x6d0", "BRA.DIV UR4,0x..."); from sm_70 on every instruction is
// 16 bytes, so the offset divided by 16 is the index in the listing.
#include "toolchain/SassLoops.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cctype>
#include <set>

namespace ptxforge::toolchain {

namespace {

struct Line {
  std::string guard;    ///< "@P0", "@!P1" or empty
  std::string opcode;   ///< full mnemonic, e.g. "LDG.E.128"
  std::string base;     ///< "LDG"
  std::vector<std::string> operands;
  std::string text;     ///< the line as in SassStats::code, without the trailing space
};

Line parseLine(const std::string &raw) {
  Line line;
  std::string text = raw;
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.pop_back();
  line.text = text;
  size_t at = 0;
  if (!text.empty() && text[0] == '@') {
    at = text.find(' ');
    line.guard = text.substr(0, at);
    at = at == std::string::npos ? text.size() : at + 1;
  }
  size_t space = text.find(' ', at);
  line.opcode = text.substr(at, space == std::string::npos ? std::string::npos : space - at);
  line.base = baseOpcode(line.opcode);
  if (space != std::string::npos) {
    std::string rest = text.substr(space + 1);
    size_t start = 0;
    while (start <= rest.size()) {
      size_t comma = rest.find(',', start);
      std::string operand = rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!operand.empty()) line.operands.push_back(operand);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return line;
}

/// The byte offset a branch names: its last operand, when it is a hex number.
std::optional<uint64_t> branchTarget(const Line &line) {
  if (line.operands.empty()) return std::nullopt;
  const std::string &last = line.operands.back();
  if (last.size() < 3 || last[0] != '0' || (last[1] != 'x' && last[1] != 'X')) return std::nullopt;
  uint64_t value = 0;
  for (size_t i = 2; i < last.size(); ++i) {
    const char c = last[i];
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (digit < 0 || value > (UINT64_MAX >> 4)) return std::nullopt;
    value = value * 16 + static_cast<uint64_t>(digit);
  }
  return value;
}

bool guarded(const Line &line) { return !line.guard.empty() && line.guard != "@PT"; }

enum class Flow { Next, Branch, Stop, Indirect };

Flow flowOf(const Line &line) {
  if (line.base == "BRA" || line.base == "JMP") return Flow::Branch;
  if (line.base == "EXIT" || line.base == "RET" || line.base == "KILL" || line.base == "BPT") return Flow::Stop;
  if (line.base == "BRX" || line.base == "JMX") return Flow::Indirect;
  return Flow::Next;
}

/// A conditional branch: a guard predicate, or a predicate / uniform operand
/// before the target ("BRA P5,0x6d0", "BRA.DIV UR4,0x...").
bool conditionalBranch(const Line &line) {
  if (guarded(line)) return true;
  return line.operands.size() > 1 && line.operands.front() != "PT";
}

bool isBulkCopy(const std::string &base) {
  return base == "UTMALDG" || base == "UTMASTG" || base == "UTMAREDG" || base == "UBLKCP" || base == "UBLKRED";
}

void addToMix(const Line &line, SassMix &mix) {
  const std::string &base = line.base;
  ++mix.instructions;
  ++mix.opcodes[base];
  if (base == "FFMA" || base == "FFMA2") ++mix.ffma;
  else if (base == "IMAD" && !line.opcode.starts_with("IMAD.MOV")) ++mix.imad;
  else if (base == "LDG") { ++mix.ldg; ++mix.ldgWidths[accessWidthBits(line.opcode)]; }
  else if (base == "STG") { ++mix.stg; ++mix.stgWidths[accessWidthBits(line.opcode)]; }
  else if (base == "LDS") { ++mix.lds; ++mix.ldsWidths[accessWidthBits(line.opcode)]; }
  else if (base == "STS") { ++mix.sts; ++mix.stsWidths[accessWidthBits(line.opcode)]; }
  else if (base == "LDSM") ++mix.ldsm;
  else if (base == "LDGSTS") ++mix.ldgsts;
  else if (base == "BAR") ++mix.barInstructions;
  else if (isBulkCopy(base)) ++mix.bulkCopies;
  if (base.size() >= 4 && base.compare(base.size() - 3, 3, "MMA") == 0) ++mix.tensorCoreOps;
}

/// A loop that only polls: short, with an mbarrier/sleep instruction, and no
/// arithmetic on data or data movement.
bool isWaitLoop(const SassMix &mix) {
  if (mix.instructions > 8) return false;
  bool polls = false;
  for (const auto &[base, n] : mix.opcodes)
    if (base.starts_with("SYNCS") || base == "NANOSLEEP" || base == "YIELD") polls = true;
  return polls && mix.ffma == 0 && mix.tensorCoreOps == 0 && mix.lds == 0 && mix.sts == 0 && mix.ldsm == 0 &&
         mix.ldgsts == 0 && mix.stg == 0 && mix.bulkCopies == 0;
}

FunctionLoops analyzeFunction(const std::string &name, const std::vector<Line> &lines) {
  FunctionLoops out;
  out.function = name;
  const int n = static_cast<int>(lines.size());
  out.instructions = n;
  if (n == 0) return out;
  constexpr uint64_t kInstructionBytes = 16;

  // Leaders: the first instruction, branch targets, and what follows a branch or a stop.
  std::vector<char> leader(static_cast<size_t>(n) + 1, 0);
  leader[0] = 1;
  std::vector<int> target(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    const Flow flow = flowOf(lines[static_cast<size_t>(i)]);
    if (flow == Flow::Next) continue;
    leader[static_cast<size_t>(i) + 1] = 1;
    if (flow == Flow::Indirect && out.note.empty())
      out.note = "an indirect branch (" + lines[static_cast<size_t>(i)].opcode + ") at instruction " +
                 std::to_string(i) + ": loops through it are not seen";
    if (flow != Flow::Branch) continue;
    std::optional<uint64_t> offset = branchTarget(lines[static_cast<size_t>(i)]);
    if (!offset || *offset % kInstructionBytes != 0 || *offset / kInstructionBytes >= static_cast<uint64_t>(n)) {
      if (out.note.empty())
        out.note = "instruction " + std::to_string(i) + " branches to an address outside the function";
      continue;
    }
    target[static_cast<size_t>(i)] = static_cast<int>(*offset / kInstructionBytes);
    leader[static_cast<size_t>(target[static_cast<size_t>(i)])] = 1;
  }
  std::vector<int> blockOf(static_cast<size_t>(n));
  std::vector<int> blockStart;
  for (int i = 0; i < n; ++i) {
    if (leader[static_cast<size_t>(i)]) blockStart.push_back(i);
    blockOf[static_cast<size_t>(i)] = static_cast<int>(blockStart.size()) - 1;
  }
  const int blocks = static_cast<int>(blockStart.size());
  out.blocks = blocks;
  auto blockEnd = [&](int b) { return b + 1 < blocks ? blockStart[static_cast<size_t>(b) + 1] : n; };
  std::vector<std::vector<int>> successors(static_cast<size_t>(blocks)), predecessors(static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) {
    const int lastIndex = blockEnd(b) - 1;
    const Line &last = lines[static_cast<size_t>(lastIndex)];
    const Flow flow = flowOf(last);
    std::vector<int> &next = successors[static_cast<size_t>(b)];
    bool fallsThrough = flow == Flow::Next || (flow == Flow::Stop && guarded(last)) ||
                        (flow == Flow::Branch && conditionalBranch(last)) ||
                        (flow == Flow::Branch && target[static_cast<size_t>(lastIndex)] < 0);
    if (flow == Flow::Branch && target[static_cast<size_t>(lastIndex)] >= 0)
      next.push_back(blockOf[static_cast<size_t>(target[static_cast<size_t>(lastIndex)])]);
    if (fallsThrough && b + 1 < blocks && std::find(next.begin(), next.end(), b + 1) == next.end())
      next.push_back(b + 1);
    for (int s : next) predecessors[static_cast<size_t>(s)].push_back(b);
  }

  // Reverse postorder from the entry (iterative depth-first search).
  std::vector<int> order, rpoIndex(static_cast<size_t>(blocks), -1);
  {
    std::vector<char> seen(static_cast<size_t>(blocks), 0);
    std::vector<std::pair<int, size_t>> stack{{0, 0}};
    seen[0] = 1;
    while (!stack.empty()) {
      auto &[block, edge] = stack.back();
      const std::vector<int> &next = successors[static_cast<size_t>(block)];
      if (edge < next.size()) {
        const int s = next[edge++];
        if (!seen[static_cast<size_t>(s)]) {
          seen[static_cast<size_t>(s)] = 1;
          stack.emplace_back(s, 0);
        }
      } else {
        order.push_back(block);
        stack.pop_back();
      }
    }
    std::reverse(order.begin(), order.end());
    for (size_t i = 0; i < order.size(); ++i) rpoIndex[static_cast<size_t>(order[i])] = static_cast<int>(i);
  }
  std::vector<int> idom(static_cast<size_t>(blocks), -1);
  idom[0] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 1; k < order.size(); ++k) {
      const int b = order[k];
      int chosen = -1;
      for (int p : predecessors[static_cast<size_t>(b)]) {
        if (idom[static_cast<size_t>(p)] < 0) continue;
        if (chosen < 0) { chosen = p; continue; }
        int x = p, y = chosen;
        while (x != y) {
          while (rpoIndex[static_cast<size_t>(x)] > rpoIndex[static_cast<size_t>(y)]) x = idom[static_cast<size_t>(x)];
          while (rpoIndex[static_cast<size_t>(y)] > rpoIndex[static_cast<size_t>(x)]) y = idom[static_cast<size_t>(y)];
        }
        chosen = x;
      }
      if (chosen >= 0 && idom[static_cast<size_t>(b)] != chosen) {
        idom[static_cast<size_t>(b)] = chosen;
        changed = true;
      }
    }
  }
  auto dominates = [&](int a, int b) {
    if (idom[static_cast<size_t>(b)] < 0) return false;
    while (true) {
      if (a == b) return true;
      if (b == 0) return false;
      b = idom[static_cast<size_t>(b)];
    }
  };

  // Natural loops, one per header (the bodies of its back edges merged).
  std::map<int, std::set<int>> bodies;
  for (int u = 0; u < blocks; ++u) {
    if (idom[static_cast<size_t>(u)] < 0) continue; // unreachable
    for (int h : successors[static_cast<size_t>(u)]) {
      if (!dominates(h, u)) continue;
      std::set<int> &body = bodies[h];
      body.insert(h);
      std::vector<int> work;
      if (body.insert(u).second) work.push_back(u);
      while (!work.empty()) {
        const int b = work.back();
        work.pop_back();
        for (int p : predecessors[static_cast<size_t>(b)])
          if (idom[static_cast<size_t>(p)] >= 0 && body.insert(p).second) work.push_back(p);
      }
    }
  }
  std::vector<std::set<int>> loopBodies;
  for (auto &[header, body] : bodies) {
    SassLoop loop;
    loop.header = blockStart[static_cast<size_t>(header)];
    loop.first = n;
    loop.last = -1;
    for (int b : body)
      for (int i = blockStart[static_cast<size_t>(b)]; i < blockEnd(b); ++i) {
        loop.first = std::min(loop.first, i);
        loop.last = std::max(loop.last, i);
        addToMix(lines[static_cast<size_t>(i)], loop.mix);
        loop.listing.push_back(lines[static_cast<size_t>(i)].text);
      }
    loop.waitLoop = isWaitLoop(loop.mix);
    out.loops.push_back(std::move(loop));
    loopBodies.push_back(body);
  }
  // Nesting: the parent is the smallest other loop whose body holds this one's.
  const size_t count = out.loops.size();
  for (size_t i = 0; i < count; ++i) {
    size_t best = count;
    for (size_t j = 0; j < count; ++j) {
      if (i == j || loopBodies[j].size() <= loopBodies[i].size()) continue;
      if (!std::includes(loopBodies[j].begin(), loopBodies[j].end(), loopBodies[i].begin(), loopBodies[i].end()))
        continue;
      if (best == count || loopBodies[j].size() < loopBodies[best].size()) best = j;
    }
    out.loops[i].parent = best == count ? -1 : static_cast<int>(best);
  }
  for (size_t i = 0; i < count; ++i) {
    int depth = 1;
    for (int p = out.loops[i].parent; p >= 0 && depth <= static_cast<int>(count); p = out.loops[static_cast<size_t>(p)].parent)
      ++depth;
    out.loops[i].depth = depth;
    if (!out.loops[i].waitLoop && out.loops[i].parent >= 0)
      out.loops[static_cast<size_t>(out.loops[i].parent)].innermost = false;
  }
  for (size_t i = 0; i < count; ++i) {
    const SassLoop &loop = out.loops[i];
    if (!loop.innermost || loop.waitLoop) continue;
    if (!out.hot) {
      out.hot = static_cast<int>(i);
      continue;
    }
    const SassLoop &best = out.loops[static_cast<size_t>(*out.hot)];
    if (loop.depth > best.depth || (loop.depth == best.depth && loop.mix.instructions > best.mix.instructions))
      out.hot = static_cast<int>(i);
  }
  return out;
}

} // namespace

std::optional<double> SassMix::mathPerSharedLoad() const {
  if (lds + ldsm == 0) return std::nullopt;
  return static_cast<double>(ffma + tensorCoreOps) / static_cast<double>(lds + ldsm);
}

Result<std::vector<FunctionLoops>> sassLoops(const SassStats &stats) {
  // sm_NN: from Volta on, instructions are 16 bytes with their control bits inside.
  int major = 0;
  if (stats.arch.size() > 3 && stats.arch.starts_with("sm_")) {
    const std::string digits = stats.arch.substr(3);
    size_t used = 0;
    for (; used < digits.size() && std::isdigit(static_cast<unsigned char>(digits[used])); ++used) {}
    if (used > 0 && used <= 4) major = std::stoi(digits.substr(0, used)) / 10;
  }
  if (major < 7)
    return makeError(ErrorKind::InvalidInput,
                     "SASS loops need 16-byte instructions (sm_70 and newer); this cubin is for '" + stats.arch + "'");
  std::vector<FunctionLoops> out;
  std::string name;
  std::vector<Line> lines;
  bool inFunction = false;
  auto flush = [&] {
    if (inFunction) out.push_back(analyzeFunction(name, lines));
    lines.clear();
  };
  size_t start = 0;
  const std::string &code = stats.code;
  while (start < code.size()) {
    size_t end = code.find('\n', start);
    if (end == std::string::npos) end = code.size();
    std::string raw = code.substr(start, end - start);
    start = end + 1;
    if (raw.starts_with("function ") && !raw.empty() && raw.back() == ':') {
      flush();
      name = raw.substr(9, raw.size() - 10);
      inFunction = true;
      continue;
    }
    if (!inFunction) return makeError(ErrorKind::Internal, "SASS code without a 'function NAME:' line first");
    lines.push_back(parseLine(raw));
  }
  flush();
  return out;
}

const FunctionLoops *pickFunction(const std::vector<FunctionLoops> &loops, const std::string &name) {
  const FunctionLoops *largest = nullptr;
  for (const FunctionLoops &function : loops) {
    if (function.function == name) return &function;
    if (!largest || function.instructions > largest->instructions) largest = &function;
  }
  return largest;
}

HotLoopDiff diffHotLoops(const SassLoop &candidate, const SassLoop &reference, int maxRows) {
  HotLoopDiff diff;
  std::set<std::string> names;
  for (const auto &[op, n] : candidate.mix.opcodes) names.insert(op);
  for (const auto &[op, n] : reference.mix.opcodes) names.insert(op);
  for (const std::string &op : names) {
    auto a = candidate.mix.opcodes.find(op), b = reference.mix.opcodes.find(op);
    const int x = a == candidate.mix.opcodes.end() ? 0 : a->second;
    const int y = b == reference.mix.opcodes.end() ? 0 : b->second;
    if (x != y) diff.opcodes[op] = {x, y};
  }
  // Longest common subsequence of the full opcodes (modifiers included), on
  // at most kLimit instructions of each side (a 16-bit table of kLimit^2).
  constexpr size_t kLimit = 3000;
  std::vector<Line> a, b;
  for (size_t i = 0; i < candidate.listing.size() && i < kLimit; ++i) a.push_back(parseLine(candidate.listing[i]));
  for (size_t i = 0; i < reference.listing.size() && i < kLimit; ++i) b.push_back(parseLine(reference.listing[i]));
  const size_t rows = a.size(), cols = b.size();
  std::vector<uint16_t> table((rows + 1) * (cols + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint16_t & { return table[i * (cols + 1) + j]; };
  for (size_t i = rows; i-- > 0;)
    for (size_t j = cols; j-- > 0;)
      at(i, j) = a[i].opcode == b[j].opcode ? static_cast<uint16_t>(at(i + 1, j + 1) + 1)
                                            : std::max(at(i + 1, j), at(i, j + 1));
  struct Row { int left = -1, right = -1; };
  std::vector<Row> pairs;
  size_t i = 0, j = 0;
  while (i < rows || j < cols) {
    if (i < rows && j < cols && a[i].opcode == b[j].opcode) pairs.push_back({static_cast<int>(i++), static_cast<int>(j++)});
    else if (j >= cols || (i < rows && at(i + 1, j) >= at(i, j + 1))) pairs.push_back({static_cast<int>(i++), -1});
    else pairs.push_back({-1, static_cast<int>(j++)});
  }
  // Fold runs of alike rows longer than 3: keep the first, then one "..." row.
  const size_t limit = static_cast<size_t>(std::max(maxRows, 2));
  for (size_t k = 0; k < pairs.size();) {
    if (pairs[k].left >= 0 && pairs[k].right >= 0) {
      size_t end = k;
      while (end < pairs.size() && pairs[end].left >= 0 && pairs[end].right >= 0) ++end;
      if (end - k > 3) {
        diff.alike += static_cast<int>(end - k);
        if (diff.aligned.size() + 1 < limit)
          diff.aligned.emplace_back(a[static_cast<size_t>(pairs[k].left)].text, b[static_cast<size_t>(pairs[k].right)].text);
        if (diff.aligned.size() + 1 < limit) {
          const std::string fold = "... " + std::to_string(end - k - 1) + " more alike";
          diff.aligned.emplace_back(fold, fold);
        }
        k = end;
        continue;
      }
    }
    if (diff.aligned.size() + 1 < limit)
      diff.aligned.emplace_back(pairs[k].left >= 0 ? a[static_cast<size_t>(pairs[k].left)].text : "",
                                pairs[k].right >= 0 ? b[static_cast<size_t>(pairs[k].right)].text : "");
    else if (diff.aligned.size() + 1 == limit) {
      // Count what is left, then stop.
      diff.aligned.emplace_back("... " + std::to_string(pairs.size() - k) + " more rows", "");
    }
    if (pairs[k].left >= 0 && pairs[k].right >= 0) ++diff.alike;
    ++k;
  }
  return diff;
}

namespace {

std::string widthsText(const std::map<int, int> &widths) {
  std::string out;
  for (const auto &[bits, n] : widths) out += (out.empty() ? "" : " ") + std::to_string(n) + "x" + std::to_string(bits) + "b";
  return out;
}

nlohmann::json widthsJson(const std::map<int, int> &widths) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto &[bits, n] : widths) out[std::to_string(bits)] = n;
  return out;
}

} // namespace

std::string describeMix(const SassMix &mix) {
  std::string out = std::to_string(mix.instructions) + " instructions: " + std::to_string(mix.tensorCoreOps) +
                    " tensor-core (MMA), " + std::to_string(mix.ffma) + " FFMA, " + std::to_string(mix.imad) + " IMAD";
  auto memory = [&](const char *name, int n, const std::map<int, int> *widths) {
    if (n == 0) return;
    out += ", " + std::to_string(n) + " " + name;
    if (widths && !widths->empty()) out += " (" + widthsText(*widths) + ")";
  };
  memory("LDG", mix.ldg, &mix.ldgWidths);
  memory("LDGSTS (cp.async)", mix.ldgsts, nullptr);
  memory("TMA/bulk copies", mix.bulkCopies, nullptr);
  memory("LDS", mix.lds, &mix.ldsWidths);
  memory("LDSM (ldmatrix)", mix.ldsm, nullptr);
  memory("STS", mix.sts, &mix.stsWidths);
  memory("STG", mix.stg, &mix.stgWidths);
  memory("BAR instructions", mix.barInstructions, nullptr);
  if (std::optional<double> ratio = mix.mathPerSharedLoad()) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f", *ratio);
    out += std::string("; ") + text + " MMA+FFMA per shared load";
  }
  return out;
}

std::string topOpcodes(const SassMix &mix, size_t top) {
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto &[op, n] : mix.opcodes) sorted.emplace_back(-n, op);
  std::sort(sorted.begin(), sorted.end());
  std::string out;
  for (size_t i = 0; i < sorted.size() && i < top; ++i)
    out += (out.empty() ? "" : ", ") + sorted[i].second + " " + std::to_string(-sorted[i].first);
  return out;
}

nlohmann::json toJson(const SassMix &mix) {
  std::optional<double> ratio = mix.mathPerSharedLoad();
  return {{"instructions", mix.instructions},
          {"opcodes", mix.opcodes},
          {"tensor_core_ops", mix.tensorCoreOps},
          {"ffma", mix.ffma},
          {"imad", mix.imad},
          {"ldg", mix.ldg},
          {"stg", mix.stg},
          {"lds", mix.lds},
          {"sts", mix.sts},
          {"ldsm", mix.ldsm},
          {"ldgsts", mix.ldgsts},
          {"bulk_copies", mix.bulkCopies},
          {"bar_instructions", mix.barInstructions},
          {"ldg_widths", widthsJson(mix.ldgWidths)},
          {"stg_widths", widthsJson(mix.stgWidths)},
          {"lds_widths", widthsJson(mix.ldsWidths)},
          {"sts_widths", widthsJson(mix.stsWidths)},
          {"math_per_shared_load", ratio ? nlohmann::json(*ratio) : nlohmann::json(nullptr)}};
}

nlohmann::json toJson(const FunctionLoops &f, bool listing) {
  nlohmann::json loops = nlohmann::json::array();
  for (const SassLoop &loop : f.loops)
    loops.push_back({{"header", loop.header},
                     {"first", loop.first},
                     {"last", loop.last},
                     {"depth", loop.depth},
                     {"parent", loop.parent < 0 ? nlohmann::json(nullptr) : nlohmann::json(loop.parent)},
                     {"innermost", loop.innermost},
                     {"wait_loop", loop.waitLoop},
                     {"instructions", loop.mix.instructions}});
  nlohmann::json out = {{"function", f.function},   {"instructions", f.instructions}, {"blocks", f.blocks},
                        {"loops", std::move(loops)}, {"note", f.note},                {"hot_loop", nullptr}};
  if (f.hot) {
    const SassLoop &hot = f.loops[static_cast<size_t>(*f.hot)];
    nlohmann::json h = {{"index", *f.hot}, {"first", hot.first}, {"last", hot.last}, {"depth", hot.depth},
                        {"mix", toJson(hot.mix)}};
    if (listing) h["listing"] = hot.listing;
    out["hot_loop"] = std::move(h);
  }
  return out;
}

nlohmann::json toJson(const HotLoopDiff &diff) {
  nlohmann::json opcodes = nlohmann::json::object();
  for (const auto &[op, counts] : diff.opcodes) opcodes[op] = {{"candidate", counts.first}, {"reference", counts.second}};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto &[left, right] : diff.aligned) rows.push_back({left, right});
  return {{"opcodes", std::move(opcodes)}, {"alike", diff.alike}, {"aligned", std::move(rows)}};
}

} // namespace ptxforge::toolchain

// LaunchDirective: the `// @ptxforge block=(..) grid=(..) smem=..` comments of a
// candidate PTX module (docs/tasks.md), and their resolution into a concrete
// launch for one shape, falling back to the task's default launch.
#pragma once

#include "ptx/Diagnostic.h"
#include "support/Result.h"
#include "tasks/Expression.h"
#include "tasks/TaskSpec.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ptxforge::tasks {

/// What the candidate's directives say; parts not given fall back to the task.
struct LaunchConfig {
  std::array<Expression, 3> block;
  std::array<Expression, 3> grid;
  Expression smem;
  bool blockGiven = false;
  bool gridGiven = false;
  bool smemGiven = false;
};

/// Directives and the problems found while reading them. Diagnostics have code
/// `launch-directive`, severity Error, and the 1-based line and column of the bad part.
struct LaunchDirectiveScan {
  LaunchConfig config;
  std::vector<ptx::Diagnostic> diagnostics;
  uint32_t directiveCount = 0; ///< `@ptxforge` comments seen
};

/// Scans the `//` comments of `ptxText` for `@ptxforge key=value ...`.
/// Keys: block and grid take `(e1,e2,e3)` (1 to 3 expressions; missing
/// trailing ones are 1, as with dim3) or a single expression; smem takes one
/// expression. Values may contain spaces inside parentheses. Every symbol must
/// be one of `symbols` (the task's); a key given twice is an error.
LaunchDirectiveScan parseLaunchDirectives(std::string_view ptxText, const std::vector<std::string> &symbols);

/// A launch with concrete numbers.
struct ResolvedLaunch {
  std::array<uint32_t, 3> block{1, 1, 1};
  std::array<uint32_t, 3> grid{1, 1, 1};
  uint32_t smem = 0; ///< dynamic shared memory bytes
};

/// Hardware limits checked by resolveLaunch (sm_90 values; the same limits hold from sm_70 on
/// except for shared memory, whose 227 KiB is the sm_90 opt-in maximum per block).
inline constexpr int64_t kMaxThreadsPerBlock = 1024;
inline constexpr int64_t kMaxBlockDimXY = 1024;
inline constexpr int64_t kMaxBlockDimZ = 64;
inline constexpr int64_t kMaxGridDimX = 2147483647;
inline constexpr int64_t kMaxGridDimYZ = 65535;
inline constexpr int64_t kMaxDynamicSharedBytes = 227 * 1024;

/// Evaluates block/grid/smem for `shape` and checks them against the limits
/// above (every dimension >= 1, block product <= 1024, grid.y/z <= 65535,
/// smem <= 227 KiB). Errors name the part ("grid.x = ceildiv(n, 256) is 0 ...").
Result<ResolvedLaunch> evaluateLaunch(const std::array<Expression, 3> &block, const std::array<Expression, 3> &grid,
                                      const Expression &smem, const Shape &shape);

/// The candidate's launch for `shape`: directive parts where given, the task's
/// [launch] for the rest, evaluated and checked as in evaluateLaunch.
Result<ResolvedLaunch> resolveLaunch(const LaunchConfig &directive, const TaskSpec &task, const Shape &shape);

} // namespace ptxforge::tasks

# End-to-end tests of `ptxforge tasks` and `ptxforge task show`; included at the
# end of tests/cli/CMakeLists.txt (uses its cli_test() and ${expect}).
#
# Every test clears PTXFORGE_TASKS_DIR (an empty value adds no root) so that
# only the built-in suite and the roots given here are listed.
function(task_cli_test name rc pattern)
  cli_test(${name} "cli;unit" ${rc} "${pattern}" ${ARGN})
  set_tests_properties(cli.${name} PROPERTIES ENVIRONMENT "PTXFORGE_TASKS_DIR=")
endfunction()

# A broken task folder, written at configure time: its errors are located, the
# good built-in tasks are still listed, and the exit code is 1.
set(broken_tasks ${CMAKE_CURRENT_BINARY_DIR}/broken_tasks)
file(WRITE ${broken_tasks}/bad_level/task.toml
  "name = \"bad_level\"\nlevel = 7\ndescription = \"broken on purpose\"\nkernel = \"bad_level\"\n")
file(WRITE ${broken_tasks}/bad_level/reference.cu "extern \"C\" __global__ void bad_level() {}\n")

# tasks
# The listing fits 100 columns (golden/tasks_list.txt).
cli_exact(tasks_list 0 ${CMAKE_CURRENT_SOURCE_DIR} -- $<TARGET_FILE:ptxforge> tasks)
task_cli_test(tasks_json 0 "^\\[&&\"name\": \"saxpy\"&&\"small_shapes\":&&\"tolerance\":&&\"launch\":&&\"folder\":"
  -- $<TARGET_FILE:ptxforge> tasks --format json)
# expect.sh only checks presence: the count shows that the L1/L2 tasks were left out.
task_cli_test(tasks_level 0 "^sgemm +L3&&^hgemm +L3&&^9 tasks$"
  -- $<TARGET_FILE:ptxforge> tasks --level 3)
task_cli_test(tasks_bad_level 2 "not in range" -- $<TARGET_FILE:ptxforge> tasks --level 4)
task_cli_test(tasks_missing_root 2 "task search root is not a directory"
  -- $<TARGET_FILE:ptxforge> tasks --tasks-dir ${CMAKE_CURRENT_BINARY_DIR}/no-such-tasks-dir)
task_cli_test(tasks_broken 1
  "broken task .*bad_level&&bad_level/task\\.toml:2:[0-9]+: level must be 1, 2 or 3&&^saxpy +L1&&^25 tasks$"
  -- $<TARGET_FILE:ptxforge> tasks --tasks-dir ${broken_tasks})

# task show
task_cli_test(task_show_text 0
  "^signature: extern \"C\" __global__ void saxpy\\(const float\\* x, float\\* y, float a, int n\\)&&atol=1e-05 rtol=1e-06&&flops = 2 \\* n&&^extern \"C\" __global__ void saxpy\\(const float\\* __restrict__ x"
  -- $<TARGET_FILE:ptxforge> task show saxpy)
# The contract (description) and the reference's recipe (hints) are printed apart.
task_cli_test(task_show_hints 0 "^  C = A \\* B in f32&&^hints: +128x128 block tiles with BK = 8"
  -- $<TARGET_FILE:ptxforge> task show sgemm)
task_cli_test(task_show_json_hints 0 "\"hints\": \"128x128 block tiles"
  -- $<TARGET_FILE:ptxforge> task show sgemm --format json)
task_cli_test(task_show_json 0 "\"name\": \"saxpy\"&&\"reference\": \".*extern \\\\\"C\\\\\"&&\"atol\": 1e-05"
  -- $<TARGET_FILE:ptxforge> task show saxpy --format json)
# (no ";" in patterns: cli_test expands them unquoted, as CMake lists)
task_cli_test(task_show_unknown 2 "unknown-task: .nope.. known tasks: .*saxpy"
  -- $<TARGET_FILE:ptxforge> task show nope)
task_cli_test(task_show_typo 2 "did you mean 'sgemm'\\?" -- $<TARGET_FILE:ptxforge> task show sgem)
task_cli_test(task_show_broken 1 "bad_level/task\\.toml:2:[0-9]+: level must be 1, 2 or 3"
  -- $<TARGET_FILE:ptxforge> task show bad_level --tasks-dir ${broken_tasks})
task_cli_test(task_no_subcommand 2 "" -- $<TARGET_FILE:ptxforge> task)

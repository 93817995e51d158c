#!/usr/bin/env python3
"""Wall time of `ptxforge check` on task references, side by side for several builds.

Each task's reference PTX (from the first build) is checked against itself by every
build in turn, round-robin, `--runs` times; the table gives the median wall time and
spread per build, and for builds that report them (`timings_ms` in the JSON) the
median time of each stage of the gate. Results go to stdout as a Markdown table and
to --json.

  python3 bench/check_time.py --build new=build --build old=build-old \\
      --tasks vector_add,softmax_rows,sgemm --runs 3 --json out.json [-- extra check args]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES = ["lint", "compile", "inputs", "reference", "candidate", "compare", "bench", "sanitizer", "total"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", required=True, help="NAME=BUILD_DIR (repeatable)")
    parser.add_argument("--tasks", default="vector_add,softmax_rows,sgemm")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("extra", nargs="*", help="extra arguments for every check (after --)")
    args = parser.parse_args()
    builds = []
    for spec in args.build:
        name, _, path = spec.partition("=")
        builds.append((name, Path(path) / "ptxforge"))
    tasks = [t for t in args.tasks.split(",") if t]
    work = Path(tempfile.mkdtemp(prefix="check-time-"))
    rows = []
    for task in tasks:
        reference = work / f"{task}.ptx"
        reference.write_text(subprocess.run([str(builds[0][1]), "reference", task], check=True,
                                            capture_output=True, text=True).stdout)
        samples = {name: [] for name, _ in builds}
        stages = {name: {s: [] for s in STAGES} for name, _ in builds}
        verdicts = {name: set() for name, _ in builds}
        for _ in range(args.runs):
            for name, binary in builds:
                start = time.perf_counter()
                done = subprocess.run([str(binary), "check", str(reference), "--task", task, "--format", "json",
                                       *args.extra], capture_output=True, text=True)
                samples[name].append(time.perf_counter() - start)
                try:
                    result = json.loads(done.stdout)
                except json.JSONDecodeError:
                    verdicts[name].add(f"no JSON (exit {done.returncode})")
                    continue
                verdicts[name].add(str(result.get("verdict")))
                for stage, ms in (result.get("timings_ms") or {}).items():
                    if stage in stages[name]:
                        stages[name][stage].append(ms)
        for name, _ in builds:
            wall = samples[name]
            rows.append({
                "task": task, "build": name, "runs": len(wall), "verdicts": sorted(verdicts[name]),
                "wall_s_median": statistics.median(wall), "wall_s_min": min(wall), "wall_s_max": max(wall),
                "stages_ms_median": {s: statistics.median(v) for s, v in stages[name].items() if v},
            })
    print("| task | build | verdict | wall s median [min, max] | " + " | ".join(STAGES) + " |")
    print("|---|---|---|---|" + "---|" * len(STAGES))
    for row in rows:
        cells = [f"{row['stages_ms_median'][s]:.0f}" if s in row["stages_ms_median"] else "" for s in STAGES]
        print(f"| {row['task']} | {row['build']} | {','.join(row['verdicts'])} | "
              f"{row['wall_s_median']:.2f} [{row['wall_s_min']:.2f}, {row['wall_s_max']:.2f}] | " +
              " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"extra_args": args.extra, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

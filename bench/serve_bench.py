#!/usr/bin/env python3
"""The gate as an engine, measured: a warm `ptxforge serve` against a cold
`ptxforge check`, and KernelBench's path on the same kernel, in one run.

For each task (its NVRTC reference PTX as the candidate, so every check ends
`correct` and every stage runs):
  warm      sequential POST /v1/check to a running service: latency p50/p10/p90
            and the median of every stage in `timings_ms`
  load      N concurrent clients for a fixed number of checks: candidates/s
  cold      `ptxforge check` from the shell (process start, driver start-up,
            workers, everything)
and, when PyTorch with CUDA is there, KernelBench's loop on vector_add at the
16M-element shape: `torch.utils.cpp_extension.load_inline` (timed apart, as
"extension build"), then 5 correctness trials + 100 timed launches with CUDA
events, as KernelBench's `eval_kernel_against_ref` does.

Prints Markdown tables; --json writes every number.

  python3 bench/serve_bench.py --ptxforge build/ptxforge --tasks vector_add,saxpy \
      --warm 10 --load 40 --clients 4 --cold 3 --json out.json [--executor gpu] [-- extra check keys as k=v]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

STAGES = ["lint", "compile", "inputs", "reference", "candidate", "compare", "bench", "sanitizer", "total"]


def pct(values, q):
    values = sorted(values)
    if not values:
        return None
    k = max(0, min(len(values) - 1, int(round(q * (len(values) - 1)))))
    return values[k]


class Service:
    def __init__(self, ptxforge, executor, workers, extra_args):
        args = [ptxforge, "serve", "--port", "0", "--executor", executor, "--queue", "1000"] + extra_args
        if workers:
            args += ["--workers", str(workers)]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
        self.log = []
        self.port = None
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"listening on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            raise SystemExit("serve did not start:\n" + "".join(self.log))
        self.startup_s = time.monotonic() - self.started
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def post(self, path, body, timeout=600):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def kernelbench_vector_add(n=1 << 24):
    """KernelBench's loop on a 16M vector add: load_inline, 5 correctness trials, 100 timed launches."""
    try:
        import torch
        from torch.utils.cpp_extension import load_inline
    except Exception as e:  # noqa: BLE001
        return {"available": False, "reason": f"torch: {e}"}
    if not torch.cuda.is_available():
        return {"available": False, "reason": "torch sees no CUDA device"}
    cuda_src = r"""
#include <torch/extension.h>
__global__ void vector_add_kernel(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor vector_add(torch::Tensor a, torch::Tensor b) {
  auto c = torch::empty_like(a);
  int n = a.numel();
  vector_add_kernel<<<(n + 255) / 256, 256>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);
  return c;
}
"""
    cpp_src = "torch::Tensor vector_add(torch::Tensor a, torch::Tensor b);"
    t0 = time.monotonic()
    build_dir = tempfile.mkdtemp(prefix="kb-ext-")
    module = load_inline(name="kb_vector_add", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["vector_add"],
                         build_directory=build_dir, verbose=False, extra_cuda_cflags=["-O3"])
    build_s = time.monotonic() - t0

    def eval_once():
        t = time.monotonic()
        torch.manual_seed(42)
        for _ in range(5):  # correctness trials: fresh inputs, reference vs candidate
            a = torch.randn(n, device="cuda")
            b = torch.randn(n, device="cuda")
            ref = a + b
            out = module.vector_add(a, b)
            torch.cuda.synchronize()
            assert torch.allclose(ref, out, atol=1e-2, rtol=1e-2)
        a = torch.randn(n, device="cuda")
        b = torch.randn(n, device="cuda")
        times = []
        for _ in range(3):  # warm-up
            module.vector_add(a, b)
        torch.cuda.synchronize()
        for _ in range(100):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            module.vector_add(a, b)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return time.monotonic() - t, statistics.median(times)

    eval_once()  # the first call pays for CUDA context and cuRAND set-up
    walls = []
    kernel_ms = None
    for _ in range(5):
        wall, kernel_ms = eval_once()
        walls.append(wall)
    return {"available": True, "extension_build_s": build_s, "eval_wall_s": walls,
            "eval_wall_p50_s": statistics.median(walls), "kernel_ms_p50": kernel_ms, "n": n}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ptxforge", default="build/ptxforge")
    parser.add_argument("--tasks", default="vector_add,saxpy,relu,gelu,copy_f32x4,transpose_2d,f16_scale_bias")
    parser.add_argument("--executor", default="auto")
    parser.add_argument("--workers", type=int, default=0, help="emulator workers (serve --workers)")
    parser.add_argument("--warm", type=int, default=10, help="sequential warm checks per task")
    parser.add_argument("--load", type=int, default=40, help="checks in the load test")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients in the load test")
    parser.add_argument("--cold", type=int, default=3, help="cold `ptxforge check` runs per task")
    parser.add_argument("--no-kernelbench", action="store_true")
    parser.add_argument("--serve-arg", action="append", default=[], help="extra argument for serve (repeatable)")
    parser.add_argument("--check-arg", action="append", default=[], help="extra argument for cold check (repeatable)")
    parser.add_argument("--json", help="write every number here")
    parser.add_argument("extra", nargs="*", help="extra request keys as key=JSON (e.g. bench=false)")
    args = parser.parse_args()
    extra = {}
    for item in args.extra:
        key, _, value = item.partition("=")
        extra[key] = json.loads(value)

    tasks = [t for t in args.tasks.split(",") if t]
    work = Path(tempfile.mkdtemp(prefix="serve-bench-"))
    refs = {}
    for task in tasks:
        ptx = subprocess.run([args.ptxforge, "reference", task], capture_output=True, text=True, check=True).stdout
        refs[task] = ptx
        (work / f"{task}.ptx").write_text(ptx)

    result = {"tasks": {}, "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S")}
    service = Service(args.ptxforge, args.executor, args.workers, args.serve_arg)
    result["serve_startup_s"] = service.startup_s
    status, health = 200, json.loads(urllib.request.urlopen(f"http://127.0.0.1:{service.port}/healthz").read())
    result["health"] = health
    print(f"serve: up in {service.startup_s:.2f} s, {len(health['workers'])} worker(s) on {health['workers'][0]['device']}",
          flush=True)
    try:
        for task in tasks:
            body = {"task": task, "ptx": refs[task], **extra}
            status, first = service.post("/v1/check", body)  # the first check of a task compiles its reference
            if status != 200:
                print(f"{task}: HTTP {status}: {first}", flush=True)
                continue
            lat, stages, verdicts = [], {s: [] for s in STAGES}, {}
            for _ in range(args.warm):
                t = time.monotonic()
                status, doc = service.post("/v1/check", body)
                lat.append((time.monotonic() - t) * 1000)
                verdicts[doc.get("verdict", f"http-{status}")] = verdicts.get(doc.get("verdict", f"http-{status}"), 0) + 1
                for s in STAGES:
                    stages[s].append(doc.get("timings_ms", {}).get(s, 0.0))
            row = {"first_ms": first.get("timings_ms", {}).get("total"), "first_verdict": first.get("verdict"),
                   "warm_ms": lat, "warm_p50_ms": pct(lat, 0.5), "warm_p10_ms": pct(lat, 0.1),
                   "warm_p90_ms": pct(lat, 0.9), "verdicts": verdicts,
                   "stage_p50_ms": {s: pct(v, 0.5) for s, v in stages.items()},
                   "summary": first.get("summary")}
            result["tasks"][task] = row
            print(f"{task}: warm p50 {row['warm_p50_ms']:.1f} ms ({verdicts})", flush=True)

        # Load: --clients threads share --load checks over the tasks.
        jobs = [{"task": tasks[i % len(tasks)], "ptx": refs[tasks[i % len(tasks)]], **extra} for i in range(args.load)]
        lock = threading.Lock()
        done, latencies, load_verdicts = [], [], {}

        def client():
            while True:
                with lock:
                    if not jobs:
                        return
                    job = jobs.pop()
                t = time.monotonic()
                status, doc = service.post("/v1/check", job)
                with lock:
                    latencies.append((time.monotonic() - t) * 1000)
                    v = doc.get("verdict", f"http-{status}")
                    load_verdicts[v] = load_verdicts.get(v, 0) + 1

        t0 = time.monotonic()
        threads = [threading.Thread(target=client) for _ in range(args.clients)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        wall = time.monotonic() - t0
        result["load"] = {"checks": args.load, "clients": args.clients, "wall_s": wall,
                          "per_second": args.load / wall if wall > 0 else None, "latency_p50_ms": pct(latencies, 0.5),
                          "latency_p90_ms": pct(latencies, 0.9), "verdicts": load_verdicts}
        print(f"load: {args.load} checks, {args.clients} clients: {args.load / wall:.2f}/s ({load_verdicts})", flush=True)
    finally:
        service.stop()

    # Cold: the CLI, process start included.
    for task in tasks:
        walls, totals = [], []
        for _ in range(args.cold):
            t = time.monotonic()
            run = subprocess.run([args.ptxforge, "check", str(work / f"{task}.ptx"), "--task", task, "--format", "json",
                                  "--executor", args.executor] + args.check_arg, capture_output=True, text=True)
            walls.append((time.monotonic() - t) * 1000)
            try:
                totals.append(json.loads(run.stdout).get("timings_ms", {}).get("total"))
            except json.JSONDecodeError:
                totals.append(None)
        row = result["tasks"].setdefault(task, {})
        row["cold_ms"] = walls
        row["cold_p50_ms"] = pct(walls, 0.5)
        row["cold_gate_total_ms"] = totals

    if not args.no_kernelbench:
        result["kernelbench_vector_add"] = kernelbench_vector_add()

    print()
    print("| task | warm p50 ms | p10-p90 | cold check p50 ms | " + " | ".join(STAGES[:-1]) + " |")
    print("|---|---|---|---|" + "---|" * (len(STAGES) - 1))
    for task, row in result["tasks"].items():
        sp = row.get("stage_p50_ms", {})
        cells = " | ".join(f"{sp.get(s) or 0:.1f}" for s in STAGES[:-1])
        warm = row.get("warm_p50_ms")
        print(f"| {task} | {warm or 0:.1f} | {row.get('warm_p10_ms') or 0:.1f}-{row.get('warm_p90_ms') or 0:.1f} | "
              f"{row.get('cold_p50_ms') or 0:.0f} | {cells} |")
    if "load" in result:
        load = result["load"]
        print(f"\nload: {load['per_second']:.2f} checks/s with {load['clients']} clients "
              f"(p50 {load['latency_p50_ms']:.0f} ms, p90 {load['latency_p90_ms']:.0f} ms)")
    kb = result.get("kernelbench_vector_add")
    if kb:
        if kb.get("available"):
            print(f"KernelBench path, vector_add n={kb['n']}: extension build {kb['extension_build_s']:.1f} s, "
                  f"eval (5 correctness + 100 timed) p50 {kb['eval_wall_p50_s'] * 1000:.0f} ms, kernel {kb['kernel_ms_p50']:.3f} ms")
        else:
            print(f"KernelBench path: not run ({kb['reason']})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

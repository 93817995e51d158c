import json, sys, math
out = sys.argv[1]
for p in ("e4m3_e4m3", "e4m3_e5m2", "e5m2_e5m2"):
    try:
        g = json.load(open(f"{out}/mma_{p}_gpu.json"))["outputs"]["d"]["values"]
        e = json.load(open(f"{out}/mma_{p}_emu.json"))["outputs"]["d"]["values"]
    except Exception as error:
        print(p, "no result:", error); continue
    same = sum(1 for x, y in zip(g, e) if x == y)
    worst = max(abs(x - y) / max(1e-30, abs(x)) for x, y in zip(g, e))
    print(f"{p}: {same}/128 bit-equal, max rel diff {worst:.3g}")

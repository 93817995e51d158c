"""The emulator's profile against Nsight Compute, per task, from the JSON that
`ptxforge check REF --task T --profile --shapes small --drawn-shapes 0 --no-bench
--format json` writes on a GPU machine (scripts/gpu-emu-vs-ncu.sh): the
emulator's per-line counts of the candidate, summed into shared loads and stores
(atomics apart: ncu counts them under op_atom) and global sectors per request,
beside ncu's counters for one launch of the same cubin on the same shape.

    python3 scripts/emu-vs-ncu-table.py DIR    # DIR holds TASK.json per task
"""
import json, os, sys
tasks="vector_add saxpy relu gelu copy_f32x4 f16_scale_bias transpose_2d sum_reduction dot_product softmax_rows layernorm rmsnorm argmax_rows histogram_256 inclusive_scan_i32 sgemm hgemm gemv batched_gemm conv2d_3x3 attention_fwd".split()
def emu(c):
    r={'sld_wf':0,'sld_bc':0,'sst_wf':0,'sst_bc':0,'gld_sec':0,'gld_req':0,'gst_sec':0,'gst_req':0}
    for l in c['lines']:
        if l['shared_requests'] and not l['atomic']:
            r['sst_wf' if l['store'] else 'sld_wf']+=l['shared_wavefronts']
            r['sst_bc' if l['store'] else 'sld_bc']+=l['bank_conflicts']
        if l['global_requests'] and not l['atomic']:
            r['gst_sec' if l['store'] else 'gld_sec']+=l['global_sectors']
            r['gst_req' if l['store'] else 'gld_req']+=l['global_requests']
    return r
def ncu(m):
    g={x['name']:x['candidate'] for x in m['metrics']}
    return g
rows=[]
print("| task | shape | shared ld wavefronts emu / ncu | ld conflicts emu / ncu | shared st wavefronts emu / ncu | st conflicts emu / ncu | global ld sectors/request emu / ncu | global st sectors/request emu / ncu |")
print("|---|---|---|---|---|---|---|---|")
for t in tasks:
    try: d=json.load(open(os.path.join(sys.argv[1] if len(sys.argv) > 1 else '.', f'{t}.json')))
    except Exception as e: print(f"| {t} | (no result: {e}) |"); continue
    p=d.get('profile') or {}
    n=p.get('ncu') or {}
    if not p or 'candidate' not in p or not n.get('metrics'):
        print(f"| {t} | {d.get('verdict')} | profile missing: {n.get('error') if n else 'no ncu'} |"); continue
    e=emu(p['candidate']); g=ncu(n)
    def f(a): 
        return '—' if a is None else (f"{a:.0f}" if abs(a-round(a))<1e-9 else f"{a:.2f}")
    spr=lambda s,r: (s/r if r else None)
    shape=",".join(f"{k}={v}" for k,v in p['shape'].items())
    print(f"| {t} | {shape} | {f(e['sld_wf'])} / {f(g.get('shared_load_wavefronts'))} | {f(e['sld_bc'])} / {f(g.get('shared_load_bank_conflicts'))} | {f(e['sst_wf'])} / {f(g.get('shared_store_wavefronts'))} | {f(e['sst_bc'])} / {f(g.get('shared_store_bank_conflicts'))} | {f(spr(e['gld_sec'],e['gld_req']))} / {f(g.get('global_load_sectors_per_request'))} | {f(spr(e['gst_sec'],e['gst_req']))} / {f(g.get('global_store_sectors_per_request'))} |")

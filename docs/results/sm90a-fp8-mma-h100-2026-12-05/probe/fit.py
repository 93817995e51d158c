import json, struct, math
import os, sys
P=os.path.dirname(os.path.abspath(__file__)); W=sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(P)
def e4m3(b):
    s=-1.0 if b&0x80 else 1.0; e=(b>>3)&15; m=b&7
    if e==0: return s*math.ldexp(m,-9)
    return s*math.ldexp(8+m,e-10)
def e5m2(b):
    s=-1.0 if b&0x80 else 1.0; e=(b>>2)&31; m=b&3
    if e==0: return s*math.ldexp(m,-16)
    return s*math.ldexp(4+m,e-17)
def aCoord(g,t,i): return (g+8*((i>>2)&1), t*4+(i&3)+16*(i>>3))
def bCoord(g,t,i): return (t*4+(i&3)+16*(i>>2), g)
def cCoord(g,t,i): return (g+8*(i>>1), t*2+(i&1))
def f32(x): return struct.unpack('<f',struct.pack('<f',x))[0]
C_vals=struct.unpack('<128f',open(f'{P}/c.bin','rb').read())
def load(at,bt):
    ab=open(f'{P}/a_{at}.bin','rb').read(); bb=open(f'{P}/b_{bt}.bin','rb').read()
    dec={'e4m3':e4m3,'e5m2':e5m2}
    A=[[0]*32 for _ in range(16)]; B=[[0]*8 for _ in range(32)]; C=[[0]*8 for _ in range(16)]
    for lane in range(32):
        g,t=lane>>2,lane&3
        for i in range(16):
            r,c=aCoord(g,t,i); A[r][c]=dec[at](ab[lane*16+i])
        for i in range(8):
            r,c=bCoord(g,t,i); B[r][c]=dec[bt](bb[lane*8+i])
        for i in range(4):
            r,c=cCoord(g,t,i); C[r][c]=C_vals[lane*4+i]
    gd=json.load(open(f'{W}/mma_{at}_{bt}_gpu.json'))['outputs']['d']['values']
    D=[[0]*8 for _ in range(16)]
    for lane in range(32):
        g,t=lane>>2,lane&3
        for i in range(4):
            r,c=cCoord(g,t,i); D[r][c]=gd[lane*4+i]
    return A,B,C,D
def trunc(x, ulp):  # toward zero to a multiple of ulp
    return math.copysign(math.floor(abs(x)/ulp)*ulp, x)
def model(A,B,C,r,c,bits,group,include_c,mode):
    prods=[A[r][k]*B[k][c] for k in range(32)]
    acc=C[r][c]
    for g0 in range(0,32,group):
        ps=prods[g0:g0+group]
        terms=ps+([acc] if include_c else [])
        emax=max((math.frexp(x)[1] for x in terms if x!=0), default=0)
        ulp=math.ldexp(1.0, emax-bits)
        if mode=='trunc_each':
            s=sum(trunc(x,ulp) for x in terms)
        else:
            s=trunc(sum(terms),ulp)
        acc = s if include_c else f32(acc+s)
    return f32(acc)
for at,bt in (('e4m3','e4m3'),('e4m3','e5m2'),('e5m2','e5m2')):
    A,B,C,D=load(at,bt)
    best=[]
    for bits in range(10,26):
        for group in (4,8,16,32):
            for include_c in (True,False):
                for mode in ('trunc_each','trunc_sum'):
                    hits=sum(1 for r in range(16) for c in range(8) if model(A,B,C,r,c,bits,group,include_c,mode)==D[r][c])
                    best.append((hits,bits,group,include_c,mode))
    best.sort(reverse=True)
    exact=sum(1 for r in range(16) for c in range(8) if f32(C[r][c]+sum(A[r][k]*B[k][c] for k in range(32)))==D[r][c])
    print(at,bt,'exact-sum hits',exact,'best',best[:4])
print('--- error scale')
for at,bt in (('e4m3','e4m3'),('e4m3','e5m2'),('e5m2','e5m2')):
    A,B,C,D=load(at,bt)
    worst=0; worst2=0
    for r in range(16):
        for c in range(8):
            prods=[A[r][k]*B[k][c] for k in range(32)]
            exact=C[r][c]+sum(prods)
            scale=max([abs(C[r][c])]+[abs(p) for p in prods])
            err=abs(D[r][c]-exact)
            worst=max(worst, err/scale if scale else 0)
            worst2=max(worst2, err/abs(D[r][c]) if D[r][c] else 0)
    print(at,bt,'max err / max term = 2^%.1f' % math.log2(worst) if worst else 0, ' max rel = 2^%.1f' % math.log2(worst2))

# tail_split_sim.py (session 19): simulates the index arithmetic of k_dmv_tma's split tail
# (decode_mv_tma.cuh: TmaTail; GLIM_CUDA_TAIL_SPLIT) on the host, mirroring the kernel's code:
# tma_warp_units's ranges, the ring's requests with their jump, tma_units' row ends, the block
# merge's segments and tma_tail_put's slots, and the consumer's sums. Asserts that every unit
# is requested once and in loop order, every whole row block summed once, and every leftover
# row's slots hold each of its units once. Run: python3 bench/wip/tail_split_sim.py
import sys, collections
def muldiv(a,b,c,sub=0): return (a*b-sub)//c
def owner(u,U,W): return muldiv(u+1,W,U,1)
def run(R, nspan, no, nw, C):
    q = R//no; e = R-q*no; U = e*nspan
    if e==0 or U<no: return 'no tail'
    # host plan
    P = 1
    for r in range(e):
        x0=r*nspan; x1=x0+nspan-1
        P=max(P, owner(x1,U,no)-owner(x0,U,no)+1)
    reads = collections.Counter()
    contrib = collections.defaultdict(list)   # (rb) -> list of (kind, where, units)
    slots = {}
    for o in range(no):
        lo0=muldiv(U,o,no); lo1=muldiv(U,o+1,no)
        whole=q*nspan; rb0=q*no; lbase=rb0*nspan+lo0
        bu0=o*q*nspan; bun=whole+lo1-lo0
        def phys(i): return bu0+i if i<whole else lbase+(i-whole)
        keeps={}
        for w in range(nw):
            u0=bu0+muldiv(bun,w,nw); u1=bu0+muldiv(bun,w+1,nw); n=u1-u0
            # requests
            p0=phys(u0-bu0); nsrc=p0; nleft=n; nwhole=whole-(u0-bu0)
            seq=[]
            while nleft>0:
                cnt=min(C,nleft)
                if nwhole>0 and nwhole<cnt:
                    seq += list(range(nsrc,nsrc+nwhole)) + list(range(lbase,lbase+cnt-nwhole))
                    nsrc=lbase-nwhole
                else:
                    seq += list(range(nsrc,nsrc+cnt))
                nsrc+=C; nleft-=C
                if nwhole>0:
                    nwhole-=C
                    if nwhole<=0: nsrc=lbase-nwhole
            assert len(seq)==n
            for u in seq: reads[u]+=1
            # loop
            rb=p0//nspan; sp=p0-rb*nspan; first=True; acc=[]
            for j in range(n):
                u=seq[j]; assert u==rb*nspan+sp, (o,w,j,u,rb,sp)
                acc.append(u); sp+=1
                if sp==nspan or j+1==n:
                    # owners
                    if rb<rb0: f=rb*nspan-bu0; l=f+nspan-1
                    else:
                        x0=(rb-rb0)*nspan; f=whole+max(x0,lo0)-lo0; l=whole+min(x0+nspan,lo1)-1-lo0
                    wf=owner(f,bun,nw); wl=owner(l,bun,nw)
                    if wf==wl:
                        if rb>=rb0:
                            slot=o-owner((rb-rb0)*nspan,U,no); assert 0<=slot<P
                            key=(rb,slot); assert key not in slots; slots[key]=list(acc)
                        else: contrib[rb].append(list(acc))
                    else:
                        keeps[(w, 0 if first else 1)] = (rb, list(acc))
                    acc=[]; first=False; rb+=1; sp=0
                    if u0-bu0+j+1==whole: rb=lbase//nspan; sp=lbase-rb*nspan
        # block merge
        r0=bu0//nspan; nr=whole//nspan; l0=lo0//nspan; nl=(lo1-1)//nspan-l0+1 if lo1>lo0 else 0
        for i in range(nr+nl):
            rb = r0+i if i<nr else rb0+l0+(i-nr)
            if rb<rb0: f=rb*nspan-bu0; l=f+nspan-1
            else:
                x0=(rb-rb0)*nspan; f=whole+max(x0,lo0)-lo0; l=whole+min(x0+nspan,lo1)-1-lo0
            wf=owner(f,bun,nw); wl=owner(l,bun,nw)
            if wf==wl: continue
            slot_f = 1 if muldiv(bun,wf,nw) < f else 0
            tot=[]
            for w in range(wf,wl+1):
                k=(w, slot_f if w==wf else 0)
                if k not in keeps:
                    wu0=muldiv(bun,w,nw); wu1=muldiv(bun,w+1,nw); assert wu0==wu1,(o,w); continue
                rbk,a=keeps.pop(k); assert rbk==rb,(o,rb,w,rbk)
                tot+=a
            if rb>=rb0:
                slot=o-owner((rb-rb0)*nspan,U,no); key=(rb,slot); assert key not in slots; slots[key]=tot
            else: contrib[rb].append(tot)
        # keeps may hold leftovers only if a warp's first==last counted twice; none should remain unused
        for k,(rb,a) in keeps.items():
            assert False, ("unused keep", o, k, rb)
    assert all(v==1 for v in reads.values()) and len(reads)==R*nspan, "reads"
    for rb in range(q*no):
        assert len(contrib[rb])==1 and sorted(contrib[rb][0])==list(range(rb*nspan,rb*nspan+nspan)), rb
    # consumer
    for r in range(e):
        x0=r*nspan; of=owner(x0,U,no); ol=owner(x0+nspan-1,U,no)
        tot=[]
        for o in range(of,ol+1): tot+=slots[(q*no+r, o-of)]
        assert sorted(tot)==list(range((q*no+r)*nspan,(q*no+r+1)*nspan)), r
        assert ol-of+1<=P
    assert e*P*16 <= 4*no*16, (e,P,no)
    return q,e,P
for args in [(36,6,14,16,2),(36,11,13,32,2),(416,32,132,16,2),(416,156,66,32,2),(544,52,132,16,2),(416,32,132,16,3),(16384,52,132,16,2),(20,32,132,16,2),(133,7,132,16,2),(5,156,132,16,2),(2496,52,132,16,2)]:
    try:
        print(args, run(*args))
    except AssertionError as ex:
        print(args, "FAIL", ex)

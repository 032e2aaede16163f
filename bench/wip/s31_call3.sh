#!/bin/sh
# s31_call3.sh (session 31): why wgmma did not speed up the prefill GEMM (call 2: gate/up 137 us
# on mma.sync, 138-140 on wgmma; the tensor pipe is not the bound). Nsight Compute on one
# gate/up launch (the second 32-token sub-chunk's layer 0 of a 64-token prompt, 2-layer
# synthetic 30B) under GEMM=3 (mma.sync) and GEMM=5 (wgmma n32): stall reasons, throughputs.
# Carry [".deps", "build/src/cuda"]; ~5 minutes.
cd "$(dirname "$0")/../.." || exit 1
rm -f build/src/cuda/*.d; touch build/src/cuda/*.o
scripts/device_build.sh > $OUT/build.log 2>&1 || { tail -20 $OUT/build.log; exit 1; }
mkdir -p /tmp/pf
for g in 3 5; do
  GLIM_CUDA_GEMM=$g OUT=/tmp/pf NCU_BENCH="--synthetic --layers 2 -n 1 --prompt 64" \
    NCU_TARGETS="gu$g k_pf_gemm 6" sh bench/ncu_stalls.sh
  echo "== gate/up, GEMM=$g"
  grep -E "^ *(Duration|Elapsed Cycles|SM Frequency|Warp Cycles Per Issued Instruction|Issue Slots Busy|Registers Per Thread|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Compute \(SM\) Throughput|Executed Ipc Active) " /tmp/pf/gu${g}_details.txt | head -14
  python3 - /tmp/pf/gu${g}_raw.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next(r for r in rows if "ID" in r[0] or "Kernel Name" in r)
vals = rows[-1]
st = [(h, v) for h, v in zip(head, vals) if "issue_stalled" in h and h.endswith("per_issue_active.ratio")]
st = sorted(((float(v.replace(",", "")), h) for h, v in st if v.replace(",", "").replace(".", "").isdigit()), reverse=True)
print("stalls per issue:", ", ".join("%s %.2f" % (h.split("issue_stalled_")[1].split("_per_issue")[0], v) for v, h in st[:10]))
for h, v in zip(head, vals):
    if any(k in h for k in ("sm__pipe_tensor_op_hmma_cycles_active.avg.pct", "sm__pipe_tensor_op_gmma_cycles_active.avg.pct", "dram__throughput.avg.pct", "lts__t_sectors_srcunit_tex_op_read.sum", "smsp__inst_executed.sum ", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum")):
        print(h, v)
PY
  sed -n 1,24p /tmp/pf/gu${g}_profile.md | cut -c1-200
done
tar czf $OUT/s31_call3_ncu.tgz -C /tmp pf

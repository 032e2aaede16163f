/* options.cu: the CUDA backend's run-time options (gcu_options): each default, the GLIM_CUDA_*
 * variable that overrides it, and the measurement that chose it (bench/RESULTS.md). Read once per
 * model (forward_cuda.cu) and by the tools that sweep them (bench --variants). */
#include <stdlib.h>

#include "cuda/cuda_api.h"

static int env_int(const char *name, int def) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

extern "C" gcu_options gcu_options_default(void) {
    gcu_options o;
    o.graph = env_int("GLIM_CUDA_GRAPH", 1);
    o.pdl = env_int("GLIM_CUDA_PDL", 1);       /* decode_mv path: +2% measured (run 3 of session 2) */
    o.pf_units = env_int("GLIM_CUDA_PF", 0);   /* v1: no gain measured */
    o.bps = env_int("GLIM_CUDA_BPS", 3);
    o.kv32 = env_int("GLIM_CUDA_KV32", 0);
    o.fuse_act = env_int("GLIM_CUDA_FUSE", 0);
    o.fast = env_int("GLIM_CUDA_FAST", 1);
    o.chain = env_int("GLIM_CUDA_CHAIN", 0);
    o.chain_slots = env_int("GLIM_CUDA_CHAIN_SLOTS", 0);
    o.att_few = env_int("GLIM_CUDA_ATT_FEW", 0);
    o.att_mma = env_int("GLIM_CUDA_ATT_MMA", 1);
    o.dmv_ring = env_int("GLIM_CUDA_DMV_RING", 3);
    /* session 7, run 3: the ring's first slot at block start, the other after staging: 157.1
     * tok/s against 154.7 all at start (1: 156.6, 2: 156.4); k_dmv's register ring: 3 is 0 */
    o.late_ring = env_int("GLIM_CUDA_LATE_RING", 3);
    /* session 13 (bench/RESULTS.md v16): head groups up to 2048 keys only (a sliding layer's
     * window): a full layer at 4k keys 27.2 -> 19.5 us with the two switches below */
    o.att_group = env_int("GLIM_CUDA_ATT_GROUP", 2048);
    o.att_group_half = env_int("GLIM_CUDA_ATT_GROUP_HALF", 1024); /* session 36: RESULTS v38 */
    o.att_chunk = env_int("GLIM_CUDA_ATT_CHUNK", 64);
    /* 72 splits at a full layer past this many keys: -0.7 % at 4k on an H100 (65 one-tile splits
     * held every SM, o_proj started later; RESULTS v55), nothing at 8k, +0.4-1.0 % at 16k and
     * +0.6-1.2 % at 32k (session 53, RESULTS v56); 0: never */
    o.att_wide_keys = env_int("GLIM_CUDA_ATT_WIDE_KEYS", 12000);
    o.att_heads = env_int("GLIM_CUDA_ATT_HEADS", 4);
    /* 1 (at attention's start): +1.7 % at ctx 0 against 0 (session 3); 2 (once every block has q
     * prepared, o_proj's rings streaming off those loads): +0.3-0.9 % at ctx 0 against 1 on an
     * H200, q preparation 3.9 -> 2.4 us (session 23); 3 and 1 behind 2 (session 35, RESULTS v37).
     * 1 again since session 38, with o_proj's L2 prefetch below: its blocks, resident through
     * attention, issue it before their PDL wait while the memory idles (H100: +2.8 / +3.1 /
     * +2.7 % against 2 without the prefetch; 1 without it +0, RESULTS v40) */
    o.att_trig = env_int("GLIM_CUDA_ATT_TRIG", 1);
    /* session 13: 4k 153.6 -> 156.0 tok/s, 32k 142.5 -> 147.5 with groups up to 2048 keys
     * (one process each, same call) */
    o.att_pmerge = env_int("GLIM_CUDA_ATT_PMERGE", 16);
    o.att_pack = env_int("GLIM_CUDA_ATT_PACK", 1);
    o.att_warm = env_int("GLIM_CUDA_ATT_WARM", 0);
    /* session 6 (bench/RESULTS.md v9): on the shared-memory ring of 2 slots of 2 units the
     * integer path gives 157.6 tok/s, bf16 141.8, the register ring 136.2 (session 5: the integer
     * path on the register ring 129.4 vs 135.8) */
    o.i8 = env_int("GLIM_CUDA_I8", 1);
    o.dyn = env_int("GLIM_CUDA_DYN", 0); /* session 5, run 5: 116.2 vs 134.7 (static shares) */
    o.tma = env_int("GLIM_CUDA_TMA", 1);
    o.tma_slots = env_int("GLIM_CUDA_TMA_SLOTS", 2); /* fewer bytes in flight measured faster */
    o.tma_chunk = env_int("GLIM_CUDA_TMA_CHUNK", 2);
    o.fence_sc = env_int("GLIM_CUDA_FENCE_SC", 0);
    /* session 8, run 1: 151.0 tok/s against 148.7 without (one process, same run) */
    o.defer_merge = env_int("GLIM_CUDA_DEFER_MERGE", 1);
    /* session 8, run 2: 149.2 tok/s with it against 150.9 without: down's prologue 5.5 -> 2.4
     * us, but gate/up's loop 38.9 -> 44.0 us (its warps stall mid-stream on the span counters);
     * run 4: the arrivals moved to the end of each warp's range, 147.5 against 152.0 (gate/up's
     * block ends 8 us apart: the staging round trips at its tail), not kept */
    o.stage_i8 = env_int("GLIM_CUDA_STAGE_I8", 0);
    /* session 9: down's prologue 5.7 -> 4.6 us (run 1 timeline), 152.6 against 151.2 tok/s
     * (run 2, one process) */
    o.cluster = env_int("GLIM_CUDA_CLUSTER", 2);
    o.cluster_products = env_int("GLIM_CUDA_CLUSTER_PRODUCTS", 8);
    o.cluster_own_stage = env_int("GLIM_CUDA_CLUSTER_OWN_STAGE", 0);
    o.flag_wait = env_int("GLIM_CUDA_FLAG_WAIT", 0);
    o.late_norm = env_int("GLIM_CUDA_LATE_NORM", 1);
    /* session 11, run 2 (one process): 163.7 tok/s for every product against 150.9 with none
     * (qkvg's loop 13.1 -> 9.4 us, o_proj's step 14.4 -> 11.1, gate/up's loop 38.8 -> 35.6,
     * down's 22.1 -> 18.6 but its block ends 3.4 -> 5.9 us apart: 416 row blocks on 132 SMs) */
    o.block_rows = env_int("GLIM_CUDA_BLOCK_ROWS", 31);
    /* session 12: 161.8 against 160.8 tok/s (run 3, one process), 166.7 against 165.1 (run 7,
     * with the leftover row blocks on the first blocks) */
    o.cluster_rows = env_int("GLIM_CUDA_CLUSTER_ROWS", 1);
    /* session 12, run 6: 161.4 against 158.9 tok/s (one process), 160.4 against 158.4 (two);
     * down's block ends 6.3 -> 5.2 us apart, qkvg's step 19.9 -> 19.0 us */
    o.front_rows = env_int("GLIM_CUDA_FRONT_ROWS", 1);
    o.tma_slots_o = env_int("GLIM_CUDA_TMA_SLOTS_O", 0);
    o.tma_slots_qkvg = env_int("GLIM_CUDA_TMA_SLOTS_QKVG", 0);
    o.tma_slots_gu = env_int("GLIM_CUDA_TMA_SLOTS_GU", 0);
    o.tma_slots_down = env_int("GLIM_CUDA_TMA_SLOTS_DOWN", 0);
    o.diag_window_mb = env_int("GLIM_CUDA_DIAG_WINDOW", 0);
    o.diag_ring = env_int("GLIM_CUDA_DIAG_RING", 0);
    /* session 24 (H100, one call, alternating processes, GLIM_CUDA_SPAN=0): 135.8 tok/s with the
     * lean k_dmv_tma against 128.0 for 0, whose kernel then had the split tail compiled in (72
     * bytes of stack; the tail was removed in session 25); the span kernel takes the layers'
     * products by default, the head and SPAN=0 come here */
    o.unit_ahead = env_int("GLIM_CUDA_UNIT_AHEAD", 2);
    /* session 22 (H100, one call, alternating processes): 142.7 tok/s with the span kernel and
     * its sums in shared memory against 128.4 / 127.4 for k_dmv_tma (+11 % at ctx 0, +12 % at 4k
     * and 32k); with the sums in registers 135.8 / 136.2 (the unrolled loop's code: gate/up's loop
     * 54.1 against 51.3 us) */
    /* session 25 (H100, one call, alternating processes): 150.7 against 146.7 tok/s at ctx 0 (+2.5 %
     * at 4k, +2.3 % at 32k) with the span kernel's instance without the split tail compiled in;
     * the tail itself (session 22: 130.8 against 135.8 tok/s) was then removed, with the tail's
     * leftovers in the norm prologue and the lean k_dmv_tma's stack frame: 152.9 against 151.1
     * (+1.2 %, +1.0 % at 4k, +0.7 % at 32k; 4 processes each) */
    o.span = env_int("GLIM_CUDA_SPAN", 15);
    o.span_warps = env_int("GLIM_CUDA_SPAN_WARPS", 0);
    o.span_acc = env_int("GLIM_CUDA_SPAN_ACC", 1);
    o.span_rows = env_int("GLIM_CUDA_SPAN_ROWS", 1);
    /* session 24 (H100, 4 calls, alternating processes): 147.0 against 144.0 tok/s at ctx 0
     * (3 processes each; +1.9, +2.1, +2.7 % in the others), +1.1 % at 4k and 32k; down's 416
     * row blocks on 104 blocks of 4 leave 28 SMs on which the next qkvg starts ~27 us early */
    o.span_even = env_int("GLIM_CUDA_SPAN_EVEN", 15);
    /* session 34: every product on the one-row LATE instance, not qkvg and down on the two-row
     * one (TWO 9, LATE 6): one instance a layer, its code warm at every product; +0.3 to +1.0 %
     * at ctx 0 in all six H100 calls that ran both (RESULTS v36) */
    /* session 44 (H100, same machine, 7 alternating rounds over two calls, RESULTS v47): with the
     * row at offset 0 and two row blocks a chunk for qkvg, gate/up and down, +0.4 / +1.0 / +1.1 %
     * at ctx 0 / 4k / 32k (at 4k and 32k ahead in every round), +3.0 % without weight bytes, the
     * regime of an H200's compute-bound loops; the same bits (span_chunk_bits). The default since
     * session 46, after the GPU tests and 4 more rounds on an H100 (+0.3 / +0.7 / +0.6 %, +2.2 %
     * without weight bytes, RESULTS v49) */
    /* session 49 (H100, 4 alternating rounds, RESULTS v52): o_proj too (15) is 0 / -0.4 / -0.3 %
     * at ctx 0 / 4k / 32k with the weight bytes, +1.3 % without them and +3.3 / +2.8 / +2.6 %
     * under GLIM_CUDA_DIAG_RING=9 (an H200's bytes per unit of compute on an H100): o_proj's
     * loop, one pair of spans a warp, pays half the waits and refills. So 15 where the memory
     * outruns the SMs as on an H200 (4.8 TB/s on 132 SMs: ~36 GB/s each, an H100 SXM's ~25):
     * above 32 GB/s per SM by the data sheet. Not yet measured on an H200
     * (bench/wip/s49_h200.sh runs 13 against it there) */
    const int sms = gcu_sm_count();
    const double per_sm = sms > 0 ? gcu_peak_memory_gbps() / sms : 0.0;
    o.span_two = env_int("GLIM_CUDA_SPAN_TWO", per_sm > 32.0 ? 15 : 13);
    o.span_late = env_int("GLIM_CUDA_SPAN_LATE", 15);
    o.span_row0 = env_int("GLIM_CUDA_SPAN_ROW0", 1);
    /* session 40 (H100, 3 rounds, RESULTS v42): 175.8 against 176.3 tok/s with the weight bytes,
     * 235.9 against 229.4 without them (+2.8 %: down's loop 17.5 -> 16.7 us, gate/up's 26.5 ->
     * 25.4), the regime of an H200's compute-bound loops; off until measured there. Session 46
     * (H100, 3 rounds, with ROW0 + TWO=13 and the unshifted nibbles): -2.5 % with the weight
     * bytes and -1.7 % without them (RESULTS v49) */
    o.span_ahead = env_int("GLIM_CUDA_SPAN_AHEAD", 0);
    /* H100, alternating processes: 2 against 0 +2.0 / +1.8 / +1.7 %, 3 against 2 +0.5-1.1 %
     * (RESULTS v36); 4 against 3 +0.7 / +0.6 / +0.5 %, ahead in every round (v37) */
    o.span_spec = env_int("GLIM_CUDA_SPAN_SPEC", 4);
    /* session 38 (H100, RESULTS v40): o_proj's prefetch of every 4th gate/up row block before
     * its wait, with ATT_TRIG 1, +2.8 / +3.1 / +2.7 % against session 37's tree (every 5th +2.4 /
     * +2.7 / +2.4, every 8th +1.8 / +1.9 / +1.7; the trigger alone +0); qkvg's at its end +1.2-1.6 %
     * at ctx 0 only (it holds attention's wait back ~3 us: a grid completes once its prefetches
     * are done) */
    o.l2pf_gu = env_int("GLIM_CUDA_L2PF_GU", 0);
    o.l2pf_gu_o = env_int("GLIM_CUDA_L2PF_GU_O", 4);
    o.l2pf_gu_self = env_int("GLIM_CUDA_L2PF_GU_SELF", 16);
    o.l2pf_delay = env_int("GLIM_CUDA_L2PF_DELAY", 0);
    o.l2pf_down_self = env_int("GLIM_CUDA_L2PF_DOWN_SELF", 6);
    o.l2pf_qkvg_self = env_int("GLIM_CUDA_L2PF_QKVG_SELF", 0);
    o.span_blocks[0] = env_int("GLIM_CUDA_SPAN_BLOCKS_QKVG", 0);
    o.span_blocks[1] = env_int("GLIM_CUDA_SPAN_BLOCKS_O", 0);
    o.span_blocks[2] = env_int("GLIM_CUDA_SPAN_BLOCKS_GU", 0);
    o.span_blocks[3] = env_int("GLIM_CUDA_SPAN_BLOCKS_DOWN", 0);
    o.diag_att_twice = env_int("GLIM_CUDA_DIAG_ATT_TWICE", 0);
    o.diag_nope = env_int("GLIM_CUDA_DIAG_NOPE", 0);
    /* session 24 (H100, same call): 144.8 against 143.2 tok/s at ctx 0, attention's step 11.6 ->
     * 10.5 us (the instance without ATT_WARM's and DIAG_ATT_TWICE's passes compiled in) */
    o.att_lean = env_int("GLIM_CUDA_ATT_LEAN", 1);
    /* session 33: 1 against 0 on an H200 (3 rounds each way): 197.9 / 185.0 / 174.9 against
     * 193.2 / 180.8 / 170.1 tok/s at ctx 0 / 4k / 32k, attention 8.5 -> 7.1 us a layer (a kernel
     * run cold from the instruction cache every layer, 13.3 K -> 8.6 K instructions); 2 against 1
     * on an H100: 159.7 / 151.4 / 145.0 against 158.7 / 150.6 / 144.2 (the few-key last split of
     * a long full layer no longer on the fp32 tiles: that layer's attention at 4k 15.2 -> 13.3 us);
     * 3: SPEC 2 with the splits' partials as their own arrival flags (at_finish_poll: no fence,
     * no counters; the same bits as 2): session 51 (H100, same binary, 4 rounds) 179.1 / 173.1 /
     * 163.7 against 179.6 / 171.3 / 163.8 tok/s, +1.0 % at 4k in every round, a sliding layer at
     * 4k 12.25 -> 11.23 us (RESULTS v54) */
    o.att_spec = env_int("GLIM_CUDA_ATT_SPEC", 3);
    /* the prefill's products of 5..64 tokens of MLX weights on prefill_gemm.cu's tensor-core
     * kernel instead of k_mv (0); 2: its 32-token instance at one block an SM, split-K; 3: the
     * same with stream-K where split-K would take more than a wave; 4, 5: as 3 with 17..32
     * tokens on wgmma (hi and lo as n64's columns, or in turn at n32); 1: two blocks an SM,
     * split-K. H100, prefill of 2048 tokens: k_mv 614, GEMM=2 1438, stream-K everywhere 1534
     * (session 30, RESULTS v32), GEMM=3 as now 1553-1558 tok/s (session 31, v33) */
    o.gemm = env_int("GLIM_CUDA_GEMM", 3);
    if (o.gemm < 0 || o.gemm > 5) o.gemm = 3; /* an unknown setting: the default, not a mode */
    /* session 32 (H200, one call, alternating processes): prefill of 2048 tokens 1900-1902 tok/s
     * in sub-chunks of 64 against 1570-1573 in sub-chunks of 32 (+21 %); a 64-token layer 680.6
     * us against 2 x 410.7 (the GEMMs 506 against 593 us, attention 113 against 134) */
    o.prefill_t = env_int("GLIM_CUDA_PREFILL_T", GCU_TMAX);
    if (o.prefill_t < 1 || o.prefill_t > GCU_TMAX) o.prefill_t = GCU_TMAX;
    if (o.dmv_ring < 2 || o.dmv_ring > 6) o.dmv_ring = 3; /* rings past 4: the integer path only */
    return o;
}

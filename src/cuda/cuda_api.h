/* cuda_api.h: the CUDA backend's C boundary. Two parts:
 *  1. the device model and session used by the backend (forward_cuda.cu) and by `glimmer bench`,
 *     which also builds a synthetic 30B-shaped model straight in GPU memory;
 *  2. one host-side wrapper per kernel family, so tests written in C can run each kernel on
 *     host inputs and compare it with its CPU twin from src/cpu/kernels.h.
 * Everything here returns a glim_status and fills a glim_error; with no usable device the
 * functions fail with GLIM_E_BACKEND (gcu_device_count() says so up front). */
#ifndef GLIM_CUDA_API_H
#define GLIM_CUDA_API_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "model.h"

/* Tokens one forward sub-chunk carries at most (the prompt's products read each weight once per
 * sub-chunk; GLIM_CUDA_PREFILL_T picks fewer). A sliding layer's ring holds the window plus
 * this many keys (gcu_ring_rows), so it is also how far back a session may rewind by default. */
#define GCU_TMAX 64

/* Devices the runtime can use (0 when there is no GPU or no driver). Never fails. */
int gcu_device_count(void);
/* "NVIDIA H200, 132 SMs, 139.8 GiB, sm_90, 4800 GB/s peak memory bandwidth" into buf. */
void gcu_device_name(char *buf, int len);
/* The current device's memory bandwidth by its data sheet (clock and bus width), GB/s; 0 when
 * there is no device or the driver does not say. */
double gcu_peak_memory_gbps(void);

/* ---- the device model and session ------------------------------------------------------ */

typedef struct gcu_model gcu_model;
typedef struct gcu_session gcu_session;

/* Tuning switches, read once per model (environment GLIM_CUDA_GRAPH, GLIM_CUDA_PDL,
 * GLIM_CUDA_PF, GLIM_CUDA_BPS, GLIM_CUDA_KV32, GLIM_CUDA_FUSE, GLIM_CUDA_FAST,
 * GLIM_CUDA_DMV_RING, GLIM_CUDA_CHAIN, GLIM_CUDA_ATT_FEW, GLIM_CUDA_LATE_RING,
 * GLIM_CUDA_ATT_GROUP, GLIM_CUDA_ATT_HEADS, GLIM_CUDA_ATT_CHUNK, GLIM_CUDA_ATT_WIDE_KEYS, GLIM_CUDA_ATT_TRIG, GLIM_CUDA_ATT_MMA,
 * GLIM_CUDA_I8, GLIM_CUDA_DYN,
 * GLIM_CUDA_TMA, GLIM_CUDA_TMA_SLOTS, GLIM_CUDA_TMA_CHUNK, GLIM_CUDA_DEFER_MERGE,
 * GLIM_CUDA_STAGE_I8, GLIM_CUDA_FENCE_SC, GLIM_CUDA_CLUSTER, GLIM_CUDA_BLOCK_ROWS,
 * GLIM_CUDA_CLUSTER_ROWS, GLIM_CUDA_FRONT_ROWS, GLIM_CUDA_CHAIN_SLOTS, GLIM_CUDA_TMA_SLOTS_O,
 * GLIM_CUDA_TMA_SLOTS_QKVG, GLIM_CUDA_ATT_PMERGE, GLIM_CUDA_ATT_PACK, GLIM_CUDA_UNIT_AHEAD,
 * GLIM_CUDA_SPAN, GLIM_CUDA_SPAN_WARPS, GLIM_CUDA_SPAN_ACC, GLIM_CUDA_SPAN_ROWS, GLIM_CUDA_SPAN_EVEN, GLIM_CUDA_SPAN_TWO, GLIM_CUDA_SPAN_LATE, GLIM_CUDA_SPAN_BLOCKS_*,
 * GLIM_CUDA_ATT_WARM, GLIM_CUDA_ATT_LEAN, GLIM_CUDA_TMA_SLOTS_GU, GLIM_CUDA_TMA_SLOTS_DOWN,
 * GLIM_CUDA_L2PF_GU, GLIM_CUDA_L2PF_GU_O, GLIM_CUDA_L2PF_GU_SELF, GLIM_CUDA_L2PF_DOWN_SELF,
 * GLIM_CUDA_L2PF_QKVG_SELF, GLIM_CUDA_L2PF_DELAY override the defaults; GLIM_CUDA_DIAG_WINDOW,
 * GLIM_CUDA_DIAG_RING, GLIM_CUDA_DIAG_ATT_TWICE and GLIM_CUDA_DIAG_NOPE are timing diagnostics). */
typedef struct gcu_options {
    int graph;     /* one CUDA graph per decode token (default 1) */
    int pdl;       /* programmatic dependent launch between kernels (default 1) */
    int pf_units;  /* units each matvec warp prefetches into L2 before its input is ready (0;
                      decode_mv.cu: the units after its register ring) */
    int bps;       /* decode matrix-vector blocks per SM (default 3) */
    int kv32;      /* KV cache in fp32 instead of bf16 (GLIM_CUDA_KV32=1; tests) */
    int fuse_act;  /* decode: gate/up matvec stages its SwiGLU output itself (GLIM_CUDA_FUSE, 0) */
    int fast;      /* decode through decode_mv.cu (norms inside the matvecs, 5 kernels per layer;
                      GLIM_CUDA_FAST, default 1) instead of stage kernels + the generic matvec */
    int dmv_ring;  /* decode matvec: weight units in flight per warp, 2..4, 2..6 on the integer
                      path (GLIM_CUDA_DMV_RING, 3) */
    int chain;     /* decode: a layer's o, gate/up, down and the next qkvg in one launch with grid
                      barriers, the weights' ring running on across them (decode_chain.cu: the
                      integer path on the shared-memory ring; GLIM_CUDA_CHAIN, default 0:
                      measured ~9 % slower, bench/RESULTS.md v15) */
    int chain_slots; /* the chain's ring: slots of tma_chunk units per warp at most
                        (GLIM_CUDA_CHAIN_SLOTS, 0: as many as fit) */
    int att_few;   /* attention: tiles of <= 8 keys scored one warp per (head, key)
                      (GLIM_CUDA_ATT_FEW, default 0: measured no faster, session 3) */
    int late_ring; /* decode matvec: request the ring's first weights before the PDL wait (0),
                      once the prologue's rows are in (1) or after staging (2); the shared-
                      memory ring also its first slot first and the rest after staging (3)
                      (GLIM_CUDA_LATE_RING, 3) */
    int att_group; /* attention: keys up to which a kv head's query heads spread over blocks of
                      4 heads, each reading the keys (GLIM_CUDA_ATT_GROUP, 2048); beyond, one
                      block per kv head and split */
    int att_group_half; /* attention: keys past which a kv head's heads spread over half as many
                           blocks (twice the heads each, the keys read half as often), up to
                           att_group (GLIM_CUDA_ATT_GROUP_HALF, 1024; 0: off). 8 heads a
                           block everywhere: +0.5 % at 4k and 32k, -0.7 % at ctx 0 (RESULTS
                           v37); past 1024 keys only: +0.1 / +0.5 / +0.5 % (v38) */
    int att_heads; /* attention: query heads per block where a kv head's heads spread over
                      blocks (att_group; GLIM_CUDA_ATT_HEADS, 4) */
    int att_chunk; /* attention: keys per split at least (GLIM_CUDA_ATT_CHUNK, 64 = one tile):
                      more keys per block, fewer blocks and partials */
    int att_wide_keys; /* decode attention, SPEC 3: a full layer seeing more keys than this takes
                          up to 72 splits a kv head, not 64 (GLIM_CUDA_ATT_WIDE_KEYS; 0: never) */
    int att_mma;   /* attention: each tile's scores and P V by bf16 mma, q and P split into
                      hi + lo bf16 (GLIM_CUDA_ATT_MMA, 1) instead of fp32 dot products */
    int att_trig;  /* decode attention lets o_proj launch (PDL) once all its blocks started
                      (1), once they all have q prepared (2, the default since session 23), or
                      their tiles done (3); 0: as they exit (GLIM_CUDA_ATT_TRIG) */
    int att_pmerge; /* decode attention: the splits' partials merged by the last min(G, splits,
                       att_pmerge) blocks to arrive, one query head each, instead of by the
                       last block alone (GLIM_CUDA_ATT_PMERGE, 16; 0: the last block) */
    int att_warm;  /* decode attention rehearses its q preparation and first tile before the PDL
                      wait, on the row as it stands and writing only shared memory, so that
                      the real pass finds its code and constants in the SM's caches
                      (GLIM_CUDA_ATT_WARM, 0) */
    int att_pack;  /* attention: the grid's blocks numbered split-major over the head groups
                      in use, so that the blocks with work are the first the hardware starts
                      (GLIM_CUDA_ATT_PACK, 1; 0: numbered as launched, kv head x group x split) */
    int i8;        /* decode matvec on MLX 4-bit: integer tensor cores, x as 8-bit digits
                      (GLIM_CUDA_I8, 1) instead of bf16 hi + lo */
    int dyn;       /* with i8: blocks take row-block chunks from a counter, so faster SMs do more
                      (GLIM_CUDA_DYN, 0) instead of equal static shares */
    int tma;       /* decode matvec: weights stream by bulk copies into a ring in shared memory
                      (GLIM_CUDA_TMA, 1) instead of the register ring */
    int tma_slots; /* its slots per warp at most (GLIM_CUDA_TMA_SLOTS, 2; 0: as many as fit) */
    /* the same for one product alone (GLIM_CUDA_TMA_SLOTS_O, _QKVG, _GU, _DOWN; 0: tma_slots).
     * _GU since session 39: with gate/up's prefetched row blocks (l2pf_gu_o, l2pf_gu_self) an
     * L2 hit holds one of a warp's 2 slots while its bytes wait for the warp, so the memory has
     * fewer of its requests in flight */
    int tma_slots_o, tma_slots_qkvg, tma_slots_gu, tma_slots_down;
    int tma_chunk; /* units per slot, one bulk copy each (GLIM_CUDA_TMA_CHUNK, 2) */
    int defer_merge; /* decode matvec on the shared-memory ring: a warp's first row block, when
                        split with other warps, arrives at its merge at the end of the warp's
                        range together with the last one (GLIM_CUDA_DEFER_MERGE, 1) instead of
                        mid-stream (0) */
    int cluster;   /* decode: down (shared-memory ring, integer path) in clusters of this many
                      blocks that share its prologue's staging, each block staging 1/n of the
                      19968-wide row into every block's shared memory (GLIM_CUDA_CLUSTER, 2;
                      1: none; up to 8 where that many fit one block per SM: an H200 fits 2) */
    int cluster_products; /* the products that run in those clusters, a mask as block_rows's
                             (GLIM_CUDA_CLUSTER_PRODUCTS, 8: down; session 9 measured sharing
                             the 6656-wide stagings slower) */
    int cluster_own_stage; /* the products (mask) whose blocks, in clusters, stage the whole
                              row each, the cluster only owning row blocks together
                              (cluster_rows): fewer, larger owners for a better balance where
                              row blocks are few (qkvg's 544 and o_proj's 416 on 132 SMs: 5
                              and 4 per block against means of 4.1 and 3.2), without the peers'
                              staging barrier (GLIM_CUDA_CLUSTER_OWN_STAGE, 0; with
                              CLUSTER_PRODUCTS=11 -1 % in session 18, shared staging -3 %) */
    int stage_i8;  /* decode: gate/up's SwiGLU epilogue stages down's input as the integer
                      path's digits, so down's prologue is one copy (GLIM_CUDA_STAGE_I8, 0:
                      measured slower, bench/RESULTS.md v11, and -3 % again in session 18) */
    int block_rows; /* decode matvec on the shared-memory ring: the products in this mask (1
                       qkvg, 2 o_proj, 4 gate/up, 8 down, 16 head) give each block whole row
                       blocks, its warps merging split ones in shared memory, instead of
                       stream-K ranges over the grid merged through global memory
                       (GLIM_CUDA_BLOCK_ROWS, 31: all) */
    int front_rows; /* with block_rows: the row blocks left over from an even share go to the
                       first blocks, which the hardware starts first, on the SMs the previous
                       kernel leaves first (GLIM_CUDA_FRONT_ROWS, default 1; 0: spread evenly) */
    int cluster_rows; /* with block_rows: where a product runs in clusters (down), the cluster
                         owns the row blocks, merging through distributed shared memory
                         (GLIM_CUDA_CLUSTER_ROWS, default 1) */
    int late_norm; /* decode matvec on the shared-memory ring, NORM/RESID: the consumer norm's
                      scale applied to the row sums after the loop instead of to the row before
                      staging (the digits staged are of y (1 + w)): its block reduction then
                      leaves the prologue's critical path (GLIM_CUDA_LATE_NORM, default 1:
                      +0.6 % at every context, session 18; the logits' bits change, one fp32
                      multiply moved) */
    int flag_wait; /* decode: every boundary of a layer (qkvg -> attention -> o_proj -> gate/up ->
                      down -> next qkvg or the head) released by the producer's blocks through
                      a counter in global memory (release / acquire at GPU scope) instead of
                      the PDL wait, which waits for the grid's completion and flush
                      (GLIM_CUDA_FLAG_WAIT, 0; -1.5 % in session 18). Every product on the
                      shared-memory ring, PDL on, no hooks, one GPU; otherwise the PDL wait */
    int fence_sc;  /* the cross-block merges (the decode matvecs' row blocks, attention's
                      splits) fence with the sequentially consistent __threadfence
                      (GLIM_CUDA_FENCE_SC=1) instead of the acquire-release fence they need (0) */
    int unit_ahead; /* 1: k_dmv_tma's loop loads each unit's registers while the one before it
                       computes, in a lean kernel (MLX 4-bit on the integer path, block-owned row
                       blocks, no ring diagnostic: the stream-K row ends and the diagnostics are
                       compiled out; the same bits; only where the span kernel does not take the
                       call, e.g. with GLIM_CUDA_SPAN=0); 2: the same lean kernel without the loads
                       ahead; 0: the general kernel, every path compiled in. GLIM_CUDA_UNIT_AHEAD,
                       2 (session 24: 135.8 against 128.0 tok/s for 0, whose kernel then had the
                       refuted split tail compiled in, 72 bytes of stack; the tail was removed
                       in session 25) */
    int span;       /* the products (mask: qkvg 1, o_proj 2, gate/up 4, down 8) whose decode
                       matvec runs span-major (decode_mv_span.cu: each warp owns whole spans of
                       the block's row blocks and stages them itself as it reaches them, so no
                       block waits for the whole row's staging; MLX 4-bit on the integer path,
                       other products on k_dmv_tma; other bits than k_dmv_tma's).
                       GLIM_CUDA_SPAN, default 15 (session 22: +11 % at ctx 0 on an H100 with
                       span_acc; 0: k_dmv_tma for all; session 25: the refuted split tail, merely
                       compiled in, had cost it 2.7 %, and was removed) */
    int span_warps; /* its span groups (GLIM_CUDA_SPAN_WARPS, 0: the kernel's choice; with one row
                       group, the warps that own spans) */
    int span_rows;  /* its warps as span groups x this many row groups, 1, 2, 4 or 8 (each warp its
                       group's spans of every span_rows-th row block of the block: even work where
                       the spans do not divide among 16 warps, each span staged span_rows times;
                       GLIM_CUDA_SPAN_ROWS, 1) */
    int span_acc;   /* 1 (default): its row blocks' sums in shared memory, the loop over them not
                       unrolled; 0: in registers, the loop unrolled (~4.5k instructions for
                       gate/up's 19 row blocks per block: its loop 5 % slower, session 22)
                       (GLIM_CUDA_SPAN_ACC) */
    int span_two;   /* the products (mask as span) whose span kernel, with its sums in shared
                       memory, takes two row blocks a chunk (4 units a ring slot, one barrier and
                       one refill per two; where two slots of them fit: gate/up at the 30B's
                       shapes only with span_row0) instead of one (GLIM_CUDA_SPAN_TWO, 13. Session 28: 9, qkvg
                       and down, ~+0.2 % on an H100 off the LATE instance; since session 37 on
                       the LATE and SPEC instances too: on an H100 -0.4 %, without weight bytes
                       (the loops compute-bound, as an H200's are) +1.8 %, RESULTS v39; 13, qkvg,
                       gate/up and down, with span_row0, the default since session 46: +0.4 / +1.0 / +1.1 %
                       on an H100, +3.0 % without weight bytes, RESULTS v47) */
    int span_row0;  /* the span kernel's NORM/RESID row at the start of its shared memory, without
                       k_dmv_tma's staging area before it, which it does not use (~30 KB at the
                       30B's 6656 columns; RAW products none), so that two slots of two row blocks
                       fit for gate/up too (GLIM_CUDA_SPAN_ROW0, 1 since session 46) */
    int span_late;  /* the products (mask as span) whose span kernel (sums in shared memory, one
                       or two row blocks a chunk) requests only its
                       ring's first slot before the PDL wait, the rest after the prologue: for
                       o_proj, half the bytes requested while attention runs, which slow
                       attention's first pass (RESULTS v30) (GLIM_CUDA_SPAN_LATE; 6, o_proj and
                       gate/up, in sessions 28-33: +0.5 / +0.75 / +0.65 % at ctx 0 / 4k / 32k
                       on an H100; 15 since session 34, with span_two 0: one kernel instance a
                       layer, +0.3-1 % at ctx 0, RESULTS v36) */
    int span_spec;  /* that LATE instance with the profiling stamps, the no-bytes diagnostic,
                       the flag release and the fused staging compiled out (1), and the timeline
                       as well where it is off (2; with the timeline on, 1), and the norm's
                       scale before the loop and the softcap epilogue too (3), the uneven
                       shares and the inputs' scalar loads too (4) (GLIM_CUDA_SPAN_SPEC, 4 since
                       session 35: 2 +1.7-2.0 % on an H100, 3 another +0.5-1 %, RESULTS v36-v37) */
    int span_ahead; /* the products (mask as span) whose span kernel, on its LATE instance
                       (general or SPEC 4; the 30B's format, groups of 64 and bf16 scales),
                       makes each pair of spans' digits during the previous pair's last chunk,
                       in one basic block with its units, instead of between the pairs, where a
                       warp's staging chain (~250 instructions a pair, ~0.5 us on the no-bytes
                       loop: RESULTS v29) overlapped only other warps' work. The same digits, the
                       same bits (GLIM_CUDA_SPAN_AHEAD, 0) */
    int span_even;  /* the products (mask as span) whose span-major matvec runs on the fewest
                       blocks with the same largest share of row blocks (down's 416: 104 blocks of
                       4, none of 3; qkvg's 544: 109 of 5 or 4): no block ends early, and the SMs
                       left free take the next kernel's blocks at once. GLIM_CUDA_SPAN_EVEN, 15
                       (session 24: +2 % at ctx 0, +1 % at 4k and 32k on an H100) */
    int span_blocks[4]; /* qkvg, o_proj, gate/up, down: their span-major matvec on at most this
                           many blocks (0: one per SM), span_even then choosing within them: a
                           sweep of how many SMs a product needs to hold the memory's pace, the
                           rest taking the next kernel early (GLIM_CUDA_SPAN_BLOCKS_QKVG, _O, _GU,
                           _DOWN; 0. Session 25: every cap tried lost, 0.3 to 3 %: down on 84 or
                           70 blocks, o_proj on 84, gate/up on 125 or 111, qkvg on 91) */
    /* L2 prefetch of a later product's weights by an earlier launch (gcu_dmv_call.l2pf), so that
     * the memory, idle through attention and the prologues, serves part of a memory-bound loop
     * before it starts: every N-th row block (whole, all its spans) of the matrix, so that the
     * hits fall all through the consumer's warps' streams and its own requests keep the memory
     * busy. l2pf_gu_o: o_proj's blocks take gate/up's row blocks rb % M == 0 before their PDL
     * wait, i.e. during attention, with att_trig 1 (GLIM_CUDA_L2PF_GU_O, 4; 0 off); l2pf_gu:
     * qkvg's blocks rb % N == N - 1 at their end (GLIM_CUDA_L2PF_GU, 0: its grid completes only
     * once the prefetch is done, which holds attention back); l2pf_gu_self: gate/up's own blocks,
     * before their PDL wait (during o_proj's loop), rb % S == S - 2 (GLIM_CUDA_L2PF_GU_SELF, 16:
     * +1.4 / +1.2 / +1.2 % on an H100 over o_proj's alone, session 39; 8, 12, 24 within 0.4 %,
     * 32 less); l2pf_delay: SM clock cycles from an early prefetcher's block start to its pieces
     * (GLIM_CUDA_L2PF_DELAY, 0: attention's loads queue behind o_proj's prefetch, 5.5 -> 7.3 us
     * a layer; 4000 gave back 0.2-0.3 % at 4k and 32k and lost 0.4 % at ctx 0, session 39) */
    int l2pf_gu, l2pf_gu_o, l2pf_gu_self, l2pf_delay;
    /* a product's own blocks before their PDL wait, rb % S == S - 2, as l2pf_gu_self: down's
     * during gate/up's tail (GLIM_CUDA_L2PF_DOWN_SELF, 6: +0.7 / +0.5 / +0.5 % on an H100,
     * session 39; 4, 8, 16 less), qkvg's during the previous down's loop
     * (GLIM_CUDA_L2PF_QKVG_SELF, 0: neutral at 8 and 16 on an H100, to try on an H200) */
    int l2pf_down_self, l2pf_qkvg_self;
    int diag_window_mb; /* TIMING DIAGNOSTIC, wrong logits: the decode matvecs read their weights
                           from this many MB at each matrix's start, which stay in L2, so a token
                           runs as if weight bytes were free (the loops' compute ceiling; bench
                           --variants; GLIM_CUDA_DIAG_WINDOW, 0: off) */
    int diag_ring; /* TIMING DIAGNOSTIC, wrong logits: the decode matvecs' rings are fed otherwise
                      than the products need (DmvArgs.diag_ring): 1 and 2 other address
                      patterns, 3 every owner of row blocks cut to the mean share, 4 no weight
                      bytes past each ring slot's first fill (the loops' own compute ceiling, on
                      valid units so that the sums stay finite), 5 no prologue (no rows
                      read, normed or staged: what the prologues cost), and of the norms'
                      prologue 6 the residual's L2 read left out, 7 both rows' reads, 8 the
                      gains' reads; 9 (the span kernel only) 2 of every 7 chunks a warp requests
                      without bytes, an H200's bytes per unit of compute on an H100;
                      GLIM_CUDA_DIAG_RING, 0: off */
    int diag_att_twice; /* TIMING DIAGNOSTIC, same logits: decode attention runs its tiles twice,
                           the second time from scratch (gcu_attn_call.diag_twice), so that the
                           timeline's "tiles' math" adds what a pass costs with its code, constants
                           and data already in the SM's caches (GLIM_CUDA_DIAG_ATT_TWICE, 0) */
    int att_lean;  /* attention runs the kernel instance without ATT_WARM's rehearsal and
                      DIAG_ATT_TWICE's second pass compiled in, where neither is on (the same
                      outputs; GLIM_CUDA_ATT_LEAN, 1: session 24, +1.1 % at ctx 0 on an H100) */
    int att_spec;  /* decode attention runs the instance compiled for D = 128, a bf16 cache, the
                      tensor-core tiles and no o_proj staging, where the call is that (the same
                      outputs, 6.1 K instructions against 13.3 K; 2: also the few-key splits on the tensor
                      cores, other bits there, 5.2 K; GLIM_CUDA_ATT_SPEC, 2) */
    int diag_nope; /* TIMING DIAGNOSTIC, wrong logits: the decode's attention skips RoPE on every
                      layer, so a sliding layer's attention runs as a full one's: what RoPE's
                      factors and rotation cost it (GLIM_CUDA_DIAG_NOPE, 0) */
    int gemm;      /* prefill: the products of 5..64 tokens of MLX weights on prefill_gemm.cu's
                      kernel, x staged in shared memory once per block and span
                      (GLIM_CUDA_GEMM, 3: its 32- and 64-token instances at 1 block per SM, 4
                      and 3 stages, stream-K where split-K would take more than a wave; 4, 5: as
                      3 on wgmma for 17..32 tokens; 2: split-K only; 1: the 32-token instance at
                      2 blocks, 2 stages, split-K; 0: k_mv, which reads x per warp and unit, in
                      parts of 32 tokens) */
    int prefill_t; /* prefill: tokens per forward sub-chunk, 1..64 (GLIM_CUDA_PREFILL_T, 64): the
                      prompt's weights are read once per sub-chunk, and attention, norms and
                      staging run once per sub-chunk; 32 was the only size before session 32 */
} gcu_options;

gcu_options gcu_options_default(void);

/* Uploads a bound model's text weights (re-laid out for the kernels). Checks device memory
 * first. progress: 1 draws a progress bar on stderr (the caller decides it is a terminal). */
glim_status gcu_model_upload(const glim_model *m, int progress, gcu_model **out, glim_error *err);
/* A model with cfg's shapes, MLX affine `bits`-bit weights with bf16 scales and biases in
 * groups of `group`, random values generated on the device (no file, no host copy). */
glim_status gcu_model_synthetic(const glim_config *cfg, int bits, int group, uint64_t seed,
                                gcu_model **out, glim_error *err);
void gcu_model_free(gcu_model *m);
void gcu_model_set_options(gcu_model *m, const gcu_options *o);
/* Bytes of weights one decode token reads (every matrix once, norms, one embedding row). */
uint64_t gcu_model_weight_bytes(const gcu_model *m);
uint64_t gcu_model_device_bytes(const gcu_model *m);

uint64_t gcu_session_bytes(const gcu_model *m, int n_ctx, int n_batch, int n_rewind);
glim_status gcu_session_new(gcu_model *m, int n_ctx, int n_batch, int n_rewind, gcu_session **out,
                            glim_error *err);
void gcu_session_free(gcu_session *s);
/* Attaches research hooks (src/hooks.h) to a session; NULL detaches. glim_eval sets them from the
 * glim_session on each call; the benchmark sets them directly. */
struct glim_hooks;
void gcu_session_set_hooks(gcu_session *s, struct glim_hooks *h);
/* Runs n tokens at positions pos..pos+n-1 (n <= n_batch), logits as in glim_eval. */
glim_status gcu_forward(gcu_session *s, const int32_t *tokens, int n, int pos,
                        glim_logits_mode mode, float *logits, glim_error *err);
/* Bench helper: fills the KV cache rows of positions [0, n) with random bf16 values, as if
 * n tokens had been evaluated (so decode at a long context can be timed without its prefill). */
glim_status gcu_session_fake_context(gcu_session *s, int n, uint64_t seed, glim_error *err);
/* KV bytes one decode token at position pos reads (every visible key and value). */
uint64_t gcu_kv_bytes_read(const gcu_model *m, int pos);
/* Device time (ms) of the last forward, measured with events around its kernels. */
double gcu_session_last_gpu_ms(const gcu_session *s);

/* Bench helper: device time of each kind of kernel launched alone (no PDL), median of 20, on
 * the session's buffers at position pos (run one forward first). Returns the rows filled. */
typedef struct gcu_prof_row {
    char name[160];
    double ms, bytes; /* bytes: weights streamed, 0 when not a matrix */
    double flops;     /* gcu_profile_prefill's matrix rows: 2 x rows x K x tokens, else 0 */
} gcu_prof_row;
int gcu_profile(gcu_session *s, int pos, gcu_prof_row *rows, int max, glim_error *err);
/* Tokens of the session's prompt sub-chunks (GLIM_CUDA_PREFILL_T, at most 64). */
int gcu_session_prefill_t(const gcu_session *s);
/* The same for a prompt's sub-chunk of T (<= 64) tokens at positions pos.. (the KV cache's
 * rows as they are: timing only): each product (GLIM_CUDA_GEMM's kernel or k_mv), the stage
 * kernels, attention of a sliding and of a full layer (with its q/k preparation and o_proj's
 * staging), and one whole layer as the prompt's forward enqueues it. Returns the rows filled. */
int gcu_profile_prefill(gcu_session *s, int pos, int T, gcu_prof_row *rows, int max, glim_error *err);

/* Bench helper (timeline.cu): one decoded token at position pos as the graph runs it, reps
 * times, each kernel timed in place by its blocks' %globaltimer. Per kind of kernel (mean over
 * its launches): step = its last block's end minus the previous kernel's (these add up to the
 * token), start / release = its first block's start / first block past the PDL wait, relative
 * to the previous kernel's end (negative: early), run = end minus release, spread = last minus
 * first block end. token_us: first start to last end. Returns the rows filled, -1 on error. */
typedef struct gcu_tl_row {
    char name[32];
    int count; /* launches per token */
    double step_us, start_us, release_us, run_us, spread_us;
    double start_last_us; /* the last block's start (relative, as start_us): a block launched
                             only once an SM of the previous kernel left */
    /* decode matvec: the last block's loop start (relative, as the above), and the block means
     * of waiting for the previous kernel, the prologue, the loop to the block's end; attention:
     * when the last block's tiles were done, and the means over its working blocks of waiting,
     * q and the tiles, the partials and merge to the block's end (else 0) */
    double loop_last_us, wait_us, pro_us, loop_us;
    /* attention: of pro_us, the q preparation (past the wait to q ready for the tiles) and the
     * first tile's wait (its keys and values in shared memory); the rest is the tiles' scores,
     * softmax and weighted values (else 0) */
    double q_us, tile_us;
    /* of the same blocks, the shortest wait (a block started after the previous kernel's end:
     * its work before the wait, which returns at once) and the longest prologue */
    double wait_min_us, pro_max_us;
} gcu_tl_row;
int gcu_timeline(gcu_session *s, int pos, int reps, gcu_tl_row *rows, int max, double *token_us,
                 glim_error *err);

/* Device-to-device copy bandwidth in bytes/s (bytes read + bytes written), median of reps
 * copies of `bytes` bytes. */
glim_status gcu_copy_bandwidth(uint64_t bytes, int reps, double *bw, glim_error *err);

/* Chained decode launches (GLIM_CUDA_CHAIN, decode_chain.cu) this process has enqueued: the
 * tests check with it that a chained decode really ran chained. */
long gcu_dmv_chain_count(void);
/* Decode matvec launches enqueued with a flag wait (GLIM_CUDA_FLAG_WAIT), likewise. */
long gcu_dmv_flag_count(void);
/* Decode matvec launches enqueued on the lean kernels (GLIM_CUDA_UNIT_AHEAD 1 or 2), for tests. */
long gcu_dmv_ahead_count(void);
/* Decode matvec launches enqueued on the span-major kernel (GLIM_CUDA_SPAN), for tests. */
long gcu_dmv_span_count(void);
/* Of those, the launches on fewer blocks than SMs and row blocks allow (GLIM_CUDA_SPAN_EVEN,
 * GLIM_CUDA_SPAN_BLOCKS_*). */
long gcu_dmv_even_count(void);
/* Of those, the launches with two row blocks a chunk (GLIM_CUDA_SPAN_TWO) and those on a LATE
 * instance (GLIM_CUDA_SPAN_LATE), for tests. */
long gcu_dmv_two_count(void);
long gcu_dmv_late_count(void);
/* of those, on the instance with the diagnostics compiled out (GLIM_CUDA_SPAN_SPEC), at the level
 * asked for (a call that falls back to a lower level is not counted) */
long gcu_dmv_spec_count(void);
/* of those, with two row blocks a chunk */
long gcu_dmv_two_spec_count(void);
/* decode matvec launches on the span kernel that prefetched another product's bytes into L2
 * (GLIM_CUDA_L2PF_*) */
long gcu_dmv_l2pf_count(void);
/* span kernel launches on an instance that makes each pair's digits ahead (GLIM_CUDA_SPAN_AHEAD) */
long gcu_dmv_span_ahead_count(void);
/* span kernel launches with a ring of more than 2 slots a warp (GLIM_CUDA_TMA_SLOTS_GU, _DOWN) */
long gcu_dmv_deep_count(void);
/* Prefill GEMM launches so far (prefill_gemm.cu; tests check that it ran). */
long gcu_gemm_count(void);
/* The current device's SM count (0 on an error), for tests whose shapes depend on it. */
int gcu_sm_count(void);
/* Decode attention launches enqueued with GLIM_CUDA_DIAG_ATT_TWICE's second pass (tests). */
long gcu_attn_twice_count(void);
/* Decode attention launches enqueued with GLIM_CUDA_ATT_WARM's rehearsal (tests). */
long gcu_attn_warm_count(void);
/* Attention launches enqueued on the instance without the extra passes (GLIM_CUDA_ATT_LEAN, tests). */
long gcu_attn_lean_count(void);
long gcu_attn_spec_count(void);
/* of those, on SPEC 3 (GLIM_CUDA_ATT_SPEC=3: the splits' partials as their own arrival flags) */
long gcu_attn_poll_count(void);
/* of those, with GLIM_CUDA_ATT_GROUP_HALF live (head groups that can halve past its keys) */
long gcu_attn_half_count(void);

/* ---- kernel wrappers for tests (host in, host out; they allocate what they need) ---------- */

enum { GCU_EPI_STORE = 0, GCU_EPI_SWIGLU = 1, GCU_EPI_SOFTCAP = 2 };

/* out[t][r] = sum_c x[t][c] W[r][c] for T tokens (1 <= T <= 32) with the tiled tensor-core
 * kernel. epi SOFTCAP applies cap*tanh(v*mult/cap); epi SWIGLU takes W2 (up) as well and
 * returns silu(W x) * (W2 x). smem: 1 stages x in shared memory (T <= 2), 0 reads it from global. */
glim_status gcu_test_matvec(const glim_matrix *W, const glim_matrix *W2, const float *x, int T,
                            int epi, float mult, float cap, int smem, float *out, glim_error *err);

/* The decode matrix-vector kernel with its input prepared in the kernel (pro: 0 raw x = src,
 * 1 x = norm_out(src), 2 h' = h_in + centred_norm(src; w_add) then x = norm_out(h')); returns
 * W x through epilogue epi (SWIGLU: W2 is up, out = silu(W x) * (W2 x)), and h' for mode 2.
 * The product runs twice; an error if the two outputs differ in any bit. */
typedef struct gcu_test_dmv {
    int pro, K;
    const float *src, *h_in;     /* [K]; h_in for mode 2 */
    const float *w_add;          /* mode 2: gain of the centred norm on src */
    float eps_add;
    const float *w_out;          /* modes 1, 2: gain of the output norm */
    int out_centered;
    float eps_out;
    int epi;
    float mult, cap;
    int ring;                    /* units in flight per warp: 2, 3 or 4 */
    int late_ring;               /* when the ring is requested (gcu_dmv_call.late_ring) */
    int i8;                      /* the integer path where the format has one (gcu_dmv_call.i8) */
    int dyn;                     /* with i8: chunks taken at run time (gcu_dmv_call.dyn) */
    int max_blocks;              /* at most this many blocks (0: one per SM) */
    int tma;                     /* the shared-memory ring by bulk copies (gcu_dmv_call.tma) */
    int tma_slots;               /* its slots per warp at most (0: as many as fit) */
    int tma_chunk;               /* units per slot (0: 1) */
    int defer_merge;             /* gcu_dmv_call.defer_merge */
    int cluster;                 /* gcu_dmv_call.cluster */
    int block_rows;              /* gcu_dmv_call.block_rows */
    int cluster_rows;            /* gcu_dmv_call.cluster_rows */
    int front_rows;              /* gcu_dmv_call.front_rows */
    int cluster_own_stage;       /* gcu_dmv_call.cluster_own_stage */
    int span;                    /* gcu_dmv_call.span (an error if the span-major kernel
                                    cannot take the call) */
    int span_warps;              /* gcu_dmv_call.span_warps */
    int span_acc;                /* gcu_dmv_call.span_acc */
    int span_rows;               /* gcu_dmv_call.span_rows */
    int span_even;               /* gcu_dmv_call.span_even */
} gcu_test_dmv;
glim_status gcu_test_decode_matvec(const glim_matrix *W, const glim_matrix *W2,
                                   const gcu_test_dmv *p, float *out, float *h_out,
                                   glim_error *err);

/* gate/up (W gate, W2 up, input as p describes) with its SwiGLU output staged as digits for D
 * (down, gcu_dmv_call.stage_dig), then D on those digits (pre_dig) and D on the SwiGLU rows
 * staged by its own prologue: act [W rows], out_staged and out_plain [D rows]. The pair runs
 * twice; an error if a bit changes between the runs or if D would not take digits. */
/* The integer path's digits of nitems items of 8 values (v[8 nitems]; a multiple of 32 items,
 * groups of lp consecutive items, lp 4, 8 or 16) as the decode prologues stage them
 * (dmv_i8_digits): words[8 q ..] the item's digit words (digit 0 of elements {0,2,4,6}, then
 * {1,3,5,7}, then digits 1, 2 and 3 likewise; digit 3 of {0,2,4,6} is zero), ex[2 q ..] its
 * group's (E, sum x). */
glim_status gcu_test_i8_digits(const float *v, int nitems, int lp, uint32_t *words, float *ex, glim_error *err);
glim_status gcu_test_swiglu_down(const glim_matrix *W, const glim_matrix *W2, const glim_matrix *D,
                                 const gcu_test_dmv *p, float *act, float *out_staged, float *out_plain,
                                 glim_error *err);

/* One token's norm stage: h' = h + norm(src) (mode 2) and x = norm_out(h'); returns h' and x. */
typedef struct gcu_test_norm {
    int K;
    const float *h, *src;        /* [K] */
    const float *w_add;          /* [K] gain of the norm applied to src (centred) */
    float eps_add;
    const float *w_out;          /* [K] gain of the output norm */
    int out_centered;            /* 1: gain 1+w, 0: plain w */
    float eps_out;
} gcu_test_norm;
glim_status gcu_test_residual_norm(const gcu_test_norm *p, float *h_out, float *x_out,
                                   glim_error *err);
/* The embedding row of `token` (dequantized), then the weightless norm. */
glim_status gcu_test_embed(const glim_matrix *E, int token, float eps, float *row_out,
                           float *normed_out, glim_error *err);

/* q/k preparation for one token: per-head weightless norm, q *= qk_scale, RoPE at pos (when
 * inv_freq != NULL). q: [n_heads][D], k: [n_kv][D] in place. */
glim_status gcu_test_qk_prep(float *q, int n_heads, float *k, int n_kv, int D, float eps,
                             float qk_scale, int pos, const float *inv_freq, glim_error *err);

/* Decode attention of one query against n_keys cached rows (keys and values rounded to bf16 in
 * the cache, as the backend stores them), followed by the sigmoid gate:
 * out[h][d] = attention(q)[h][d] * sigmoid(gate[h][d]). nsplit splits the keys across blocks;
 * few: tiles of <= 8 keys scored one warp per (head, key); mma: tiles on the tensor cores
 * (gcu_attn_call.mma; where the shapes do not allow it, the fp32 path runs); pmerge: the splits
 * merged by the last blocks to arrive, one head each (gcu_attn_call.pmerge). */
glim_status gcu_test_attention(const float *q, const float *keys, const float *values,
                               const float *gate, int n_keys, int n_heads, int n_kv, int D,
                               float scale, int nsplit, int few, int mma, int pmerge, float *out,
                               glim_error *err);

/* Elementwise twins: out = a * sigmoid(g); out = silu(g) * u; z = cap*tanh(z*mult/cap). */
glim_status gcu_test_elementwise(int op, const float *a, const float *b, int n, float mult,
                                 float cap, float *out, glim_error *err);
enum { GCU_EW_GATE = 0, GCU_EW_SWIGLU = 1, GCU_EW_SOFTCAP = 2 };

#ifdef __cplusplus
}
#endif
#endif

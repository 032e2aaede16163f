/* stage_digits_test.cu: the test wrapper of the gate/up -> down handoff in digits
 * (GLIM_CUDA_STAGE_I8): gate/up's SwiGLU epilogue stages down's input as the integer path's
 * digits (gcu_dmv_call.stage_dig) and down copies them (pre_dig) instead of staging the SwiGLU
 * rows itself. Host code through the public decode-matvec calls only. */
#include "cuda/gcu.cuh"
#include "cuda/cuda_api.h"

#include <stdlib.h>
#include <string.h>

extern "C" glim_status gcu_test_swiglu_down(const glim_matrix *W, const glim_matrix *W2, const glim_matrix *D,
                                            const gcu_test_dmv *p, float *act_out, float *out_staged,
                                            float *out_plain, glim_error *err) {
    if (gcu_device_count() <= 0) return glim_fail(err, GLIM_E_BACKEND, "no CUDA device");
    const int K = p->K, N = (int)W->rows, R = (int)D->rows;
    if ((int)D->cols != N || W2->rows != W->rows)
        return glim_fail(err, GLIM_E_ARG, "swiglu/down test: down's width %lld is not gate/up's %d rows",
                         (long long)D->cols, N);
    gcu_mat gu, dn;
    memset(&gu, 0, sizeof gu);
    memset(&dn, 0, sizeof dn);
    gcu_xfmt fg, fd;
    int sg, sd;
    glim_status s = gcu_mat_format_of(W, &fg, &sg, err);
    if (s == GLIM_OK) s = gcu_mat_format_of(D, &fd, &sd, err);
    if (s != GLIM_OK) return s;
    gcu_mat_geometry(&gu, &fg, sg, 16 * ((N + 7) / 8));
    gcu_mat_geometry(&dn, &fd, sd, R);
    gcu_mat_pair pair = {W, W2};
    float *src = NULL, *hin = NULL, *wa = NULL, *wo = NULL, *hout = NULL, *act = NULL, *dout = NULL;
    unsigned char *dig = NULL;
    float2 *part = NULL;
    int *cnt = NULL, *scnt = NULL;
    const size_t part_bytes = gcu_mv_partial_bytes(gcu_sm_count(), 2), dig_bytes = gcu_dmv_digits_bytes(&fd);
    const int ncnt = gu.nrb > dn.nrb ? gu.nrb : dn.nrb;
    float *first = (float *)malloc(sizeof(float) * (R > 0 ? R : 1));
    if (!first) return glim_fail(err, GLIM_E_NOMEM, "out of host memory");
    if ((s = gcu_mat_upload(&gu, gcu_rows_swiglu, (void *)&pair, err)) ||
        (s = gcu_mat_upload(&dn, gcu_rows_plain, (void *)D, err)) || (s = gcu_test_upload(&src, p->src, K, err)) ||
        (s = gcu_test_upload(&hin, p->h_in, K, err)) || (s = gcu_test_upload(&wa, p->w_add, K, err)) ||
        (s = gcu_test_upload(&wo, p->w_out, K, err)) ||
        (s = gcu_check(cudaMalloc((void **)&hout, sizeof(float) * K), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&act, sizeof(float) * N), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dout, sizeof(float) * R), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&dig, dig_bytes), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&part, part_bytes), "alloc", err)) ||
        (s = gcu_check(cudaMalloc((void **)&cnt, sizeof(int) * ncnt), "alloc", err)) ||
        (s = gcu_check(cudaMemset(cnt, 0, sizeof(int) * ncnt), "memset", err)) ||
        (s = gcu_check(cudaMalloc((void **)&scnt, sizeof(int) * fd.nspan), "alloc", err)) ||
        (s = gcu_check(cudaMemset(scnt, 0, sizeof(int) * fd.nspan), "memset", err)))
        goto out;
    {
        gcu_dmv_call c, d;
        gcu_test_dmv_call(p, &gu, src, hin, hout, wa, wo, act, N, part, part_bytes, cnt, &c);
        c.epi = GCU_EPI_SWIGLU;
        c.dyn = 0;
        d = c;
        c.stage_f = &dn.f;
        c.stage_dig = dig;
        c.stage_cnt = scnt;
        d.m = &dn;
        d.pro = GCU_PRO_RAW;
        d.K = N;
        d.src = act;
        d.h_in = d.h_out = NULL;
        d.w_add = d.w_out = NULL;
        d.epi = GCU_EPI_STORE;
        d.out = dout;
        d.out_rows = R;
        d.pre_dig = dig;
        if (!gcu_dmv_takes_digits(&d)) {
            s = glim_fail(err, GLIM_E_UNSUPPORTED, "swiglu/down test: down would not take staged digits "
                          "(the integer path on the shared-memory ring)");
            goto out;
        }
        /* twice: the span counters must be left at zero, and no bit may change between runs */
        for (int rep = 0; rep < 2 && s == GLIM_OK; rep++) {
            if ((s = gcu_check(cudaMemset(act, 0xff, sizeof(float) * N), "poison", err)) ||
                (s = gcu_check(cudaMemset(dig, 0xff, dig_bytes), "poison", err)) || /* E NaN if unstaged */
                (s = gcu_check(cudaMemset(dout, 0xff, sizeof(float) * R), "poison", err)) ||
                (s = gcu_dmv_launch(&c, 0, err)) || (s = gcu_dmv_launch(&d, 0, err)) ||
                (s = gcu_check(cudaDeviceSynchronize(), "swiglu + down", err)) ||
                (s = gcu_check(cudaMemcpy(rep ? out_staged : first, dout, sizeof(float) * R, cudaMemcpyDeviceToHost),
                               "copy", err)))
                break;
        }
        if (s == GLIM_OK && memcmp(first, out_staged, sizeof(float) * R) != 0)
            s = glim_fail(err, GLIM_E_BACKEND, "swiglu/down test: two runs through staged digits differ");
        /* down again on the SwiGLU rows themselves, staging them in its own prologue */
        d.pre_dig = NULL;
        if (s == GLIM_OK && !(s = gcu_check(cudaMemset(dout, 0xff, sizeof(float) * R), "poison", err)) &&
            !(s = gcu_dmv_launch(&d, 0, err)) && !(s = gcu_check(cudaDeviceSynchronize(), "down", err)))
            s = gcu_check(cudaMemcpy(out_plain, dout, sizeof(float) * R, cudaMemcpyDeviceToHost), "copy", err);
        if (s == GLIM_OK) s = gcu_check(cudaMemcpy(act_out, act, sizeof(float) * N, cudaMemcpyDeviceToHost), "copy", err);
    }
out:
    cudaFree(gu.w), cudaFree(dn.w), cudaFree(src), cudaFree(hin), cudaFree(wa), cudaFree(wo), cudaFree(hout);
    cudaFree(act), cudaFree(dout), cudaFree(dig), cudaFree(part), cudaFree(cnt), cudaFree(scnt);
    free(first);
    return s;
}

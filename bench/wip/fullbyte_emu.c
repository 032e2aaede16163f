/* fullbyte_emu.c (session 46; CPU only): checks the integer path's whole-byte scheme
 * (bench/wip/fullbyte.patch) before a GPU runs it. (1) dmv_i8_digits' byte code
 * (i8_digits.cuh), emulated in C (float products, round-to-nearest-even conversion, byte
 * permutes), against the definition of test_cuda_kernels' ref_i8_digits (copied here: double
 * arithmetic and division), byte for byte, on the test's kinds plus random bit patterns; (2) one
 * group's product as the tensor cores and dmv_unit_i8_f form it (A = the weight word's whole
 * bytes for the low rows, 16 qh for the high ones; B = the digits; int32 sums; 256 D0 + D1 and
 * 256 D2 + D3 to fp32, scaled by E 2^-8 and E 2^-24) against the exact sum of q x, for groups
 * of 32 and 64, with the int32 and digit ranges asserted.
 * Build: cc -O2 -o /tmp/fullbyte_emu bench/wip/fullbyte_emu.c -lm; run: /tmp/fullbyte_emu [items] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void) { rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17; return (uint32_t)(rs >> 16); }
static float urand(void) { return (float)(rnd() >> 8) / 16777216.0f; }
static float asf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t asu(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* the GPU's code, item by item (the group's max and sum given) */
static uint32_t perm(uint32_t a, uint32_t b, unsigned s) { /* __byte_perm without the sign modes */
    uint64_t x = (uint64_t)b << 32 | a;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) r |= (uint32_t)((x >> (8 * ((s >> (4 * i)) & 7))) & 255) << (8 * i);
    return r;
}
static uint32_t byte4(uint32_t a, uint32_t b, uint32_t c, uint32_t d, unsigned byte) {
    const unsigned s = byte | (byte + 4) << 4;
    return perm(perm(a, b, s), perm(c, d, s), 0x5410);
}
static int f2i_rn(float x) { /* cvt.rni.s32.f32: ties to even, saturating */
    if (isnan(x)) return 0;
    double r = nearbyint((double)x);
    return r >= 2147483647.0 ? 2147483647 : r <= -2147483648.0 ? (int)-2147483648.0 : (int)r;
}
static void gpu_digits(const float *v, float mx, uint32_t w[8]) {
    int be = (int)((asu(mx * (1.0f / 119.0f)) >> 23) & 255u);
    be = be < 26 ? 26 : be > 252 ? 252 : be;
    const float s24 = asf((uint32_t)(277 - be) << 23), s20 = asf((uint32_t)(273 - be) << 23);
    uint32_t Y[8];
    for (int k = 0; k < 8; k += 2) {
        const uint32_t zl = (uint32_t)f2i_rn(v[k] * s24), zh = (uint32_t)f2i_rn(v[k + 1] * s20);
        Y[k] = zl + 0x808080u, Y[k + 1] = zh - zl + 0x808080u;
    }
    for (int c = 0; c < 4; c++) {
        const uint32_t flip = c == 0 ? 0u : 0x80808080u;
        w[2 * c] = byte4(Y[0], Y[2], Y[4], Y[6], 3 - c) ^ flip;
        w[2 * c + 1] = byte4(Y[1], Y[3], Y[5], Y[7], 3 - c) ^ flip;
    }
}

/* the test's definition (tests/test_cuda_kernels.c: ref_i8_digits), for one item */
static int range_bad;
static void ref_digits(const float *v, float mx, uint32_t *words, float *E_out) {
    const float m119 = mx * (1.0f / 119.0f);
    int be = (int)((asu(m119) >> 23) & 255u);
    be = be < 26 ? 26 : be > 252 ? 252 : be;
    *E_out = ldexpf(1.0f, be + 1 - 127);
    const double s24 = ldexp(1.0, 150 - be);
    uint8_t d[4][8];
    for (int j = 0; j < 4; j++) {
        const double zl = nearbyint((double)v[2 * j] * s24), zh = nearbyint((double)v[2 * j + 1] * s24 / 16.0);
        const double z[2] = {zl, zh - zl};
        for (int h = 0; h < 2; h++) {
            double r = z[h];
            for (int c = 3; c >= 1; c--) {
                const double dc = r - 256.0 * floor((r + 128.0) / 256.0);
                d[c][2 * j + h] = (uint8_t)(int8_t)dc;
                r = (r - dc) / 256.0;
            }
            if (fabs(r) > 127.0) range_bad++;
            d[0][2 * j + h] = (uint8_t)(int8_t)r;
        }
    }
    for (int c = 0; c < 4; c++)
        for (int h = 0; h < 2; h++)
            words[2 * c + h] = d[c][h] | (uint32_t)d[c][2 + h] << 8 | (uint32_t)d[c][4 + h] << 16 | (uint32_t)d[c][6 + h] << 24;
}

static float gen(int kind, int j, int k) {
    switch (kind) {
    case 0: return ldexpf((j & 1 ? 1.0f : -1.0f) * (0.5f + 0.5f * urand()) * 127.0f, k);
    case 1: {
        const float t = (float)(int)(urand() * 4194304.0f) + 0.5f;
        return j % 4 == 0 ? ldexpf(-t, k - 24) : j % 4 == 1 ? ldexpf(t, k - 20) : ldexpf((j & 1 ? 1.0f : -1.0f) * urand() * 99.0f, k);
    }
    case 2: return urand() * 3.0f - 1.5f;
    case 3: return ldexpf(urand() - 0.5f, -110 - (int)(urand() * 20));
    default: { /* random bit patterns, finite */
        uint32_t u;
        do u = rnd() << 16 ^ rnd(); while (((u >> 23) & 255) == 255);
        return asf(u);
    }
    }
}

int main(int argc, char **argv) {
    const long items = argc > 1 ? atol(argv[1]) : 4000000;
    long diff = 0;
    /* (1) the bytes: groups of 8 items (the group's max over them, as the shuffles give it) */
    for (long it = 0; it < items; it += 8) {
        float v[64], mx = 0.0f;
        const int kind = (int)(it / 8 % 5), k = (int)(urand() * 100.0f) - 50;
        for (int j = 0; j < 64; j++) v[j] = gen(kind, j, k);
        if (kind == 1) v[0] = ldexpf(100.0f, k);
        for (int j = 0; j < 64; j++) mx = fmaxf(mx, fabsf(v[j]));
        if (!isfinite(mx)) continue;
        for (int i = 0; i < 8; i++) {
            uint32_t a[8], b[8];
            float E;
            gpu_digits(v + 8 * i, mx, a);
            ref_digits(v + 8 * i, mx, b, &E);
            if (memcmp(a, b, 32) && diff++ < 5) printf("item %ld kind %d differs: %08x vs %08x\n", it + i, kind, a[0], b[0]);
        }
    }
    printf("(1) %ld items: %ld differ from the definition, %d top digits out of range\n", items, diff, range_bad);

    /* (2) the products: a group of gn elements of one row, q random 0..15, x over binades */
    for (int gn = 32; gn <= 64; gn *= 2) {
        double worst = 0.0, mean = 0.0;
        long maxd = 0;
        const int groups = 200000;
        for (int gi = 0; gi < groups; gi++) {
            float x[64], mx = 0.0f;
            int q[64];
            const int k = (int)(urand() * 40.0f) - 20, outlier = gi % 7 == 0;
            for (int j = 0; j < gn; j++) {
                x[j] = ldexpf(urand() * 2.0f - 1.0f, k) * (outlier && j == 5 ? 300.0f : 1.0f);
                q[j] = gi % 11 == 0 ? 15 : (int)(rnd() % 16);
                mx = fmaxf(mx, fabsf(x[j]));
            }
            float E;
            uint32_t dw[8][8];
            for (int i = 0; i < gn / 8; i++) ref_digits(x + 8 * i, mx, dw[i], &E);
            /* D[c] = sum over items of sum over bytes j: A_lo(byte) * B_lo[c] + A_hi * B_hi[c] */
            long long D[4] = {0, 0, 0, 0};
            for (int i = 0; i < gn / 8; i++)
                for (int j = 0; j < 4; j++) {
                    const int ql = q[8 * i + 2 * j], qh = q[8 * i + 2 * j + 1];
                    const int whole = ql + 16 * qh, hi16 = 16 * qh;
                    for (int c = 0; c < 4; c++) {
                        const int bl = (int8_t)(dw[i][2 * c] >> (8 * j)), bh = (int8_t)(dw[i][2 * c + 1] >> (8 * j));
                        D[c] += (long long)whole * bl + (long long)hi16 * bh;
                    }
                }
            for (int c = 0; c < 4; c++) if (llabs(D[c]) > maxd) maxd = llabs(D[c]);
            const long long c01 = D[0] * 256 + D[1], c23 = D[2] * 256 + D[3];
            if (llabs(c01) >= (1ll << 31) || llabs(c23) >= (1ll << 31)) { printf("int32 overflow\n"); return 1; }
            /* the epilogue: acc += (E 2^-8) (float)(256 D0 + D1), (E 2^-24) (float)(256 D2 + D3) */
            float acc = fmaf(E * (1.0f / 256.0f), (float)(int)c01, 0.0f);
            acc = fmaf(E * (1.0f / 16777216.0f), (float)(int)c23, acc);
            double exact = 0.0, mag = 0.0;
            for (int j = 0; j < gn; j++) exact += (double)q[j] * x[j], mag += fabs((double)q[j] * x[j]);
            const double e = mag > 0 ? fabs(acc - exact) / mag : 0.0;
            worst = fmax(worst, e), mean += e / groups;
        }
        printf("(2) groups of %d: error against the exact sum, of sum |q x|: worst %.3g, mean %.3g; largest |D| %ld\n",
               gn, worst, mean, maxd);
    }
    return diff != 0 || range_bad != 0;
}

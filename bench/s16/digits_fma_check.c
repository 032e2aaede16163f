/* digits_fma_check.c (session 16): the integer staging's digits as session 15 computed them
 * (y = x / E, t = y + R, r = (y - (t - R)) * 128, digit = bits(t) - 0x4B400000) against the
 * formula of 4c5c8af + 69458c4 (t0 = fma(x, 1/E, R), r0 = fma(x, 128/E, fma(t0, -128, 128 R)),
 * digit = the low byte of bits(t)), in fp32 with IEEE fma, for x over every E the staging uses
 * (2^-100 .. 2^126): random values, ties, tiny values and random bit patterns with |x / E| <=
 * 127. The digit bytes must be equal everywhere; the remainders may differ only where x / E
 * underflows. Build: cc -O2 -ffp-contract=off -o /tmp/dfc bench/s16/digits_fma_check.c -lm */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static uint32_t fb(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
int main(void) {
    const float R = 12582912.0f, R128 = 128.0f * R;
    uint64_t n = 0, bad = 0, rdiff = 0, rdiff_normal = 0;
    srand(11);
    for (int it = 0; it < 30000000; it++) {
        const int be = 26 + rand() % 227; /* the clamp of dmv_i8_digits: 26 .. 252 */
        const float inv = bf((uint32_t)(253 - be) << 23), E = bf((uint32_t)(be + 1) << 23);
        float v;
        switch (it % 4) {
        case 0: v = ((float)rand() / RAND_MAX * 2 - 1) * 127.0f * E; break;
        case 1: v = bf((uint32_t)rand() << 1 ^ (uint32_t)rand()); break;
        case 2: v = ((float)rand() / RAND_MAX * 2 - 1) * E * ldexpf(1.0f, -(rand() % 60)); break;
        default: v = ((float)(rand() % 255 - 127) + ((rand() % 3) - 1) * 0.5f) * E; break; /* ties */
        }
        if (!isfinite(v) || !(fabsf(v * inv) <= 127.0f)) continue;
        n++;
        volatile float y = v * inv; /* session 15 */
        volatile float t0 = y + R;
        float r0 = (y - (t0 - R)) * 128.0f;
        volatile float t1 = r0 + R;
        float r1 = (r0 - (t1 - R)) * 128.0f;
        volatile float t2 = r1 + R;
        const int o0 = (int)fb(t0) - 0x4B400000, o1 = (int)fb(t1) - 0x4B400000, o2 = (int)fb(t2) - 0x4B400000;
        volatile float u0 = fmaf(v, inv, R); /* session 16 */
        float s0 = fmaf(v, 128.0f * inv, fmaf(u0, -128.0f, R128));
        volatile float u1 = s0 + R;
        float s1 = fmaf(s0, 128.0f, fmaf(u1, -128.0f, R128));
        volatile float u2 = s1 + R;
        if ((uint8_t)o0 != (uint8_t)fb(u0) || (uint8_t)o1 != (uint8_t)fb(u1) || (uint8_t)o2 != (uint8_t)fb(u2))
            if (bad++ < 5) printf("x=%a E=%a: digits %d %d %d against %d %d %d\n", v, E, o0, o1, o2, (int8_t)fb(u0),
                                  (int8_t)fb(u1), (int8_t)fb(u2));
        if (fb(r0) != fb(s0) || fb(r1) != fb(s1)) {
            rdiff++;
            if (fabsf(y) >= 0x1p-126f) rdiff_normal++;
        }
    }
    printf("%llu values: %llu with other digit bytes, %llu with other remainders (%llu of them where x / E "
           "does not underflow)\n", (unsigned long long)n, (unsigned long long)bad, (unsigned long long)rdiff,
           (unsigned long long)rdiff_normal);
    return bad != 0 || rdiff_normal != 0;
}

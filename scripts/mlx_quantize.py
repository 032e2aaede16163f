#!/usr/bin/env python3
"""mlx_quantize.py: glimmer's own MLX affine quantizer (numpy only), as docs/MODEL.md section 3.3
describes MLX's `affine_quantize` / `affine_dequantize`.

Format (one 2-D weight [out, in]):
  * groups of `group_size` (32, 64 or 128) consecutive elements along the input (last) dimension;
  * q in [0, 2^bits - 1]; element c of a row sits at bit c*bits of the row's little-endian bit
    stream (low bits first), the stream stored as little-endian uint32 words, shape
    [out, in*bits/32]. For 4 bits this is MLX's "low nibble = lower index"; for 3/5/6 bits it is
    the same rule applied to the whole row (bits 2, 3, 4, 5, 6, 8 supported);
  * scales and biases [out, in/group_size], stored in bf16 (MLX: the weight's dtype), f16 or f32;
  * w[o, c] = scales[o, c/G] * q + biases[o, c/G]  (computed in fp32).

Quantization per group (fp32): scale = max((max-min)/n_bins, 1e-7); if |min| > |max| the edge is
min, else the scale is negated and the edge is max; q0 = round(edge/scale); if q0 != 0 then
scale = edge/q0; bias = 0 if q0 == 0 else edge; q = clip(round((w - bias)/scale), 0, n_bins) with
the fp32 scale/bias; the stored scale/bias are then rounded to the storage dtype. So the scale can
be negative and the bias is a group extreme. round() is round-half-to-even, as MLX's.

Also here: exact bf16 <-> fp32 conversions (round to nearest even), used by make_vectors.py.

Run `python3 scripts/mlx_quantize.py --selftest` to check the packing against an independent
bit-by-bit implementation and the quantizer against a scalar transcription of the rule above.
"""
import sys

import numpy as np

SUPPORTED_BITS = (2, 3, 4, 5, 6, 8)
SUPPORTED_GROUPS = (32, 64, 128)
# storage dtype name -> safetensors dtype string
SCALE_DTYPES = {"bf16": "BF16", "f16": "F16", "f32": "F32"}


# ------------------------------------------------------------------------------------------------
# bf16 / f16 helpers


def f32_to_bf16_bits(x):
    """fp32 array -> uint16 bf16 bit patterns, round to nearest even (as torch does)."""
    x = np.ascontiguousarray(np.asarray(x, dtype=np.float32))
    u = x.view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    if nan.any():
        rounded = np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)
    return rounded


def bf16_bits_to_f32(b):
    """uint16 bf16 bit patterns -> fp32 (exact)."""
    b = np.ascontiguousarray(np.asarray(b, dtype=np.uint16))
    return (b.astype(np.uint32) << 16).view(np.float32)


def round_to(x, dtype):
    """fp32 values rounded to the nearest value of `dtype` ("bf16", "f16", "f32"), as fp32."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "bf16":
        return bf16_bits_to_f32(f32_to_bf16_bits(x))
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "f32":
        return x.copy()
    raise ValueError("unknown dtype %r (expected bf16, f16 or f32)" % (dtype,))


def encode(x, dtype):
    """fp32 values (already representable) -> (safetensors dtype string, array to write)."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "bf16":
        return "BF16", f32_to_bf16_bits(x)
    if dtype == "f16":
        return "F16", x.astype(np.float16)
    if dtype == "f32":
        return "F32", x.copy()
    raise ValueError("unknown dtype %r (expected bf16, f16 or f32)" % (dtype,))


# ------------------------------------------------------------------------------------------------
# bit packing


def pack_bits(q, bits):
    """q: integer array [out, n] with values < 2^bits -> uint32 [out, n*bits/32]."""
    q = np.asarray(q)
    if q.ndim != 2:
        raise ValueError("pack_bits wants a 2-D array, got shape %s" % (q.shape,))
    rows, n = q.shape
    if (n * bits) % 32:
        raise ValueError("row length %d x %d bits is not a whole number of uint32 words" % (n, bits))
    if q.size and (q.min() < 0 or q.max() >= (1 << bits)):
        raise ValueError("values outside [0, %d]" % ((1 << bits) - 1))
    shifts = np.arange(bits, dtype=np.uint32)
    stream = ((q.astype(np.uint32)[..., None] >> shifts) & 1).astype(np.uint8)  # LSB first
    stream = stream.reshape(rows, n * bits)
    packed_bytes = np.packbits(stream, axis=1, bitorder="little")  # [rows, n*bits/8]
    words = np.ascontiguousarray(packed_bytes).view("<u4").reshape(rows, n * bits // 32)
    return words.astype(np.uint32)


def unpack_bits(packed, bits, n):
    """uint32 [out, n*bits/32] -> uint32 [out, n]."""
    packed = np.asarray(packed)
    rows = packed.shape[0]
    if packed.shape[1] * 32 != n * bits:
        raise ValueError("packed width %d words does not hold %d x %d bits" % (packed.shape[1], n, bits))
    raw = np.ascontiguousarray(packed.astype("<u4")).view(np.uint8).reshape(rows, -1)
    stream = np.unpackbits(raw, axis=1, bitorder="little").reshape(rows, n, bits)
    weights = (np.uint32(1) << np.arange(bits, dtype=np.uint32))
    return (stream.astype(np.uint32) * weights).sum(axis=2, dtype=np.uint32)


# ------------------------------------------------------------------------------------------------
# quantize / dequantize


class Quantized:
    """A quantized weight: packed uint32 words, scales/biases as fp32 values exactly
    representable in `scale_dtype`, and the parameters."""

    def __init__(self, packed, scales, biases, group_size, bits, scale_dtype, shape):
        self.packed = packed
        self.scales = scales
        self.biases = biases
        self.group_size = group_size
        self.bits = bits
        self.scale_dtype = scale_dtype
        self.shape = shape  # original [out, in]

    def dequantize(self):
        return dequantize(self.packed, self.scales, self.biases, self.group_size, self.bits)


def check_params(group_size, bits, scale_dtype="bf16"):
    if group_size not in SUPPORTED_GROUPS:
        raise ValueError("group_size %r not in %s" % (group_size, SUPPORTED_GROUPS))
    if bits not in SUPPORTED_BITS:
        raise ValueError("bits %r not in %s" % (bits, SUPPORTED_BITS))
    if scale_dtype not in SCALE_DTYPES:
        raise ValueError("scale dtype %r not in %s" % (scale_dtype, tuple(SCALE_DTYPES)))


def quantize(w, group_size=64, bits=4, scale_dtype="bf16"):
    """w: 2-D float array [out, in] -> Quantized."""
    check_params(group_size, bits, scale_dtype)
    w = np.asarray(w, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError("quantize wants a 2-D weight, got shape %s" % (w.shape,))
    rows, n = w.shape
    if n % group_size:
        raise ValueError("input dim %d is not a multiple of group_size %d" % (n, group_size))
    n_bins = np.float32((1 << bits) - 1)
    g = w.reshape(rows, n // group_size, group_size)
    w_max = g.max(axis=2)
    w_min = g.min(axis=2)
    scale = np.maximum((w_max - w_min) / n_bins, np.float32(1e-7)).astype(np.float32)
    min_is_edge = np.abs(w_min) > np.abs(w_max)
    scale = np.where(min_is_edge, scale, -scale).astype(np.float32)
    edge = np.where(min_is_edge, w_min, w_max).astype(np.float32)
    q0 = np.round(edge / scale).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(q0 != 0, edge / q0, scale).astype(np.float32)
    bias = np.where(q0 == 0, np.float32(0), edge).astype(np.float32)
    q = np.round((g - bias[..., None]) / scale[..., None])
    q = np.clip(q, 0, n_bins).astype(np.uint32).reshape(rows, n)
    packed = pack_bits(q, bits)
    return Quantized(packed, round_to(scale, scale_dtype), round_to(bias, scale_dtype),
                     group_size, bits, scale_dtype, (rows, n))


def dequantize(packed, scales, biases, group_size, bits):
    """-> fp32 [out, in]: scale * q + bias per group, in fp32 (scale*q is exact in fp32 for
    bf16/f16 scales, so fused or not the result is the same)."""
    scales = np.asarray(scales, dtype=np.float32)
    biases = np.asarray(biases, dtype=np.float32)
    rows, n_groups = scales.shape
    n = n_groups * group_size
    q = unpack_bits(packed, bits, n).astype(np.float32).reshape(rows, n_groups, group_size)
    w = q * scales[..., None] + biases[..., None]
    return w.astype(np.float32).reshape(rows, n)


# ------------------------------------------------------------------------------------------------
# self test (pure python references; no torch needed)


def _pack_reference(q, bits):
    """Independent packing: builds each row's bit stream as one Python integer."""
    rows, n = q.shape
    words = np.zeros((rows, n * bits // 32), dtype=np.uint32)
    for r in range(rows):
        acc = 0
        for c in range(n):
            acc |= int(q[r, c]) << (c * bits)
        for k in range(words.shape[1]):
            words[r, k] = (acc >> (32 * k)) & 0xFFFFFFFF
    return words


def _mlx_4bit_word(qrow8):
    """MLX's pack_and_quantize for 4 bits: sum of q * 2^(0,4,...,28)."""
    return sum(int(v) << (4 * i) for i, v in enumerate(qrow8))


def _quantize_group_scalar(vals, bits):
    """Scalar transcription of the quantization rule for one group (fp32 via np.float32)."""
    f = np.float32
    n_bins = f((1 << bits) - 1)
    mx, mn = f(max(vals)), f(min(vals))
    scale = f(max(f(f(mx - mn) / n_bins), f(1e-7)))
    if abs(mn) > abs(mx):
        edge = mn
    else:
        scale = f(-scale)
        edge = mx
    q0 = f(np.round(f(edge / scale)))
    if q0 != 0:
        scale = f(edge / q0)
    bias = f(0) if q0 == 0 else edge
    qs = [int(min(max(np.round(f(f(f(v) - bias) / scale)), 0), int(n_bins))) for v in vals]
    return qs, scale, bias


def selftest():
    rng = np.random.default_rng(1234)
    failures = 0

    def check(cond, what):
        nonlocal failures
        if not cond:
            failures += 1
            print("FAIL", what)

    # bf16 rounding: ties to even, exactness, a few known values
    check(f32_to_bf16_bits(np.float32(1.0)) == 0x3F80, "bf16(1.0)")
    check(f32_to_bf16_bits(np.float32(3.87)) == 0x4078, "bf16(3.87) = 3.875")
    tie_down = np.array([0x3F808000], dtype=np.uint32).view(np.float32)  # halfway, even below
    tie_up = np.array([0x3F818000], dtype=np.uint32).view(np.float32)    # halfway, odd below
    check(f32_to_bf16_bits(tie_down)[0] == 0x3F80, "bf16 tie rounds to even (down)")
    check(f32_to_bf16_bits(tie_up)[0] == 0x3F82, "bf16 tie rounds to even (up)")
    x = rng.standard_normal(10000).astype(np.float32)
    xb = round_to(x, "bf16")
    check(np.all(round_to(xb, "bf16") == xb), "bf16 rounding idempotent")
    check(np.max(np.abs(xb - x) / np.abs(x)) <= 2.0 ** -8, "bf16 relative error <= 2^-8")

    # packing against the bit-by-bit reference, every width
    for bits in SUPPORTED_BITS:
        n = 64
        q = rng.integers(0, 1 << bits, size=(3, n)).astype(np.uint32)
        p = pack_bits(q, bits)
        check(p.shape == (3, n * bits // 32), "packed shape bits=%d" % bits)
        check(np.array_equal(p, _pack_reference(q, bits)), "pack == reference bits=%d" % bits)
        check(np.array_equal(unpack_bits(p, bits, n), q), "unpack(pack) bits=%d" % bits)
    q = rng.integers(0, 16, size=(2, 32)).astype(np.uint32)
    p = pack_bits(q, 4)
    for r in range(2):
        for k in range(4):
            check(int(p[r, k]) == _mlx_4bit_word(q[r, 8 * k:8 * k + 8]), "4-bit word = MLX shifts")
    check(int(pack_bits(np.array([[1] + [0] * 7]), 4)[0, 0]) == 1, "element 0 in the low nibble")
    check(int(pack_bits(np.array([[0] * 7 + [15]]), 4)[0, 0]) == 0xF0000000, "element 7 high nibble")

    # quantizer against the scalar transcription, all widths, groups and scale dtypes
    for bits in SUPPORTED_BITS:
        for gs in SUPPORTED_GROUPS:
            for sd in SCALE_DTYPES:
                w = round_to(rng.standard_normal((4, 2 * gs)) * 0.05, "bf16")
                w[1, :gs] += 0.3        # an all-positive group (edge = max side)
                w[2, gs:] -= 0.3        # an all-negative group (edge = min side)
                qt = quantize(w, gs, bits, sd)
                q = unpack_bits(qt.packed, bits, w.shape[1])
                ok = True
                for r in range(w.shape[0]):
                    for gi in range(w.shape[1] // gs):
                        vals = [float(v) for v in w[r, gi * gs:(gi + 1) * gs]]
                        qs, s, b = _quantize_group_scalar(vals, bits)
                        ok &= list(q[r, gi * gs:(gi + 1) * gs]) == qs
                        ok &= qt.scales[r, gi] == round_to(np.float32(s), sd)
                        ok &= qt.biases[r, gi] == round_to(np.float32(b), sd)
                check(ok, "quantize == scalar rule bits=%d g=%d %s" % (bits, gs, sd))
                d = qt.dequantize()
                step = np.repeat(np.abs(qt.scales), gs, axis=1)
                err = np.abs(d - w)
                # rounding error is half a step; clipping after scale = edge/q0 can add about one
                # more at the far end of a group; the stored scale's rounding (relative 2^-9 for
                # bf16, 2^-12 for f16) adds up to q times that
                rel = {"bf16": 2.0 ** -9, "f16": 2.0 ** -12, "f32": 0.0}[sd] * ((1 << bits) - 1)
                check(np.all(err <= (1.6 + rel) * step + 1e-6), "dequantize error bits=%d g=%d %s: "
                      "%g steps" % (bits, gs, sd, float(np.max(err / step))))
                check(float(np.mean(err / step)) < 0.3 + rel, "mean error bits=%d g=%d %s: %g"
                      % (bits, gs, sd, float(np.mean(err / step))))

    # degenerate groups: constant and zero
    w = np.zeros((1, 64), dtype=np.float32)
    w[0, 32:] = 0.5
    qt = quantize(w, 32, 4)
    check(np.array_equal(qt.dequantize(), w), "constant groups dequantize exactly")
    for bad in ((w, 48, 4), (w, 32, 7), (np.zeros((2, 40), np.float32), 32, 4)):
        try:
            quantize(*bad)
            check(False, "bad parameters refused %s" % (bad[1:],))
        except ValueError:
            pass
    print("mlx_quantize selftest: %s" % ("FAILED (%d)" % failures if failures else "all passed"))
    return failures == 0


if __name__ == "__main__":
    if "--selftest" in sys.argv[1:]:
        sys.exit(0 if selftest() else 1)
    print(__doc__)

"""Writes src/optim_qtables.h: the tables of the 8-bit kernels' table quantizer for the two
standard dynamic maps (mlops_optim_dynamic_map, signed and unsigned).

quantize_nearest(map, x) (src/optim_math.h, the spec) is a monotone step function of x: its
value is k from T[k] on (T[k]: the smallest float whose code is >= k, k = 1..255). Cut the
floats of [2^-23, 1.0078125) into buckets by the top 16 bits of |x| (sign, 8 exponent bits, 7
mantissa bits; below 2^-23 joins the first bucket), and give every bucket c = the code of its
smallest float. No bucket holds two thresholds (the map's entries are >= 0.7 % apart, a
bucket <= 0.78 % of its lower end; checked below), so every x of a bucket has the code
c + (x >= T[c + 1]): one byte and one float read. tests/c/qtables_exhaustive.cpp checks that
against quantize_nearest for every float; test_optimizers_kernel_logic.py reruns this script
and compares.

    python packages/optimizers/tools/gen_qtables.py [--check]
"""

import argparse
import pathlib
import sys

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[1] / "src" / "optim_qtables.h"
B_LO, B_HI = 0x3400, 0x3F80  # bucket keys (|x| bits >> 16): 2^-23 .. [1, 1.0078125)
NB = B_HI - B_LO + 1         # 2945 buckets a sign


def dynamic_map(signed):
    """mlops_optim_dynamic_map (src/optim_api.cpp), the same double operations."""
    v = []
    for i in range(7):
        items = (1 << i) + 1 if signed else (1 << (i + 1)) + 1
        scale = 10.0 ** (i - 6)
        for j in range(items - 1):
            b0 = 0.1 + 0.9 * j / (items - 1)
            b1 = 0.1 + 0.9 * (j + 1) / (items - 1)
            mean = (b0 + b1) / 2.0
            v.append(np.float32(scale * mean))
            if signed:
                v.append(np.float32(-scale * mean))
    v += [np.float32(0.0), np.float32(1.0)]
    v += [np.float32(0.0)] * (256 - len(v))
    return np.array(sorted(v), dtype=np.float32)


def quantize(qmap, x):
    """quantize_nearest, vectorized: float32 arithmetic as the C++ (x: float32 array)."""
    x = np.asarray(x, dtype=np.float32)
    lo = np.clip(np.searchsorted(qmap, x, side="right") - 1, 0, 254)  # largest lo: map[lo] <= x
    with np.errstate(invalid="ignore"):
        near = (x - qmap[lo]) <= (qmap[lo + 1] - x)
        code = np.where(near, lo, lo + 1)
        code = np.where(x >= qmap[255], 255, code)
        code = np.where(~(x > qmap[0]), 0, code)
    return code.astype(np.int64)


def key_to_f32(k):
    """Ordered integer keys -> float32 (k >= 0: +bits, k < 0: -(bits of -k))."""
    k = np.asarray(k, dtype=np.int64)
    bits = np.where(k >= 0, k, (1 << 31) | (-k))
    return bits.astype(np.uint32).view(np.float32)


def f32_to_key(f):
    b = np.asarray(f, dtype=np.float32).view(np.uint32).astype(np.int64)
    return np.where(b >= (1 << 31), -(b - (1 << 31)), b)


def thresholds(qmap):
    """T[k], k = 1..255: the smallest float with code >= k (bisection over ordered keys)."""
    lo = f32_to_key(np.float32(-2.0)) * np.ones(255, np.int64)  # code(lo) < k
    hi = f32_to_key(np.float32(2.0)) * np.ones(255, np.int64)   # code(hi) >= k
    k = np.arange(1, 256)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        ge = quantize(qmap, key_to_f32(mid)) >= k
        hi = np.where(ge, mid, hi)
        lo = np.where(ge, lo, mid)
    return key_to_f32(hi)


def buckets(qmap, T, negative):
    """Per bucket: the code of its smallest float; checks that it holds <= 1 threshold."""
    b = np.arange(B_LO, B_HI + 1, dtype=np.int64)
    first = (b << 16).astype(np.uint32).view(np.float32)
    last = ((b << 16) + 0xFFFF).astype(np.uint32).view(np.float32)
    first[0] = 0.0  # below 2^-23 joins bucket 0
    if negative:
        xmin, xmax = -last, -first
    else:
        xmin, xmax = first, last
    c = quantize(qmap, xmin)
    Tpad = np.concatenate([T, [np.float32(np.inf)] * 2]).astype(np.float32)  # T[256], T[257] = inf
    # Tpad[k - 1] = T[k]: the threshold after T[c + 1] is T[c + 2] = Tpad[c + 1]
    assert np.all(Tpad[c + 1] > xmax), "a bucket holds two thresholds"
    assert np.all(quantize(qmap, xmax) - c <= 1)
    return c.astype(np.uint8)


def c_bytes(name, data, align_to):
    data = list(int(v) for v in data) + [0] * ((-len(data)) % align_to)
    rows = [", ".join(f"{v}" for v in data[i:i + 24]) for i in range(0, len(data), 24)]
    return f"MLOPS_QTABLE uint8_t {name}[{len(data)}] = {{\n  " + ",\n  ".join(rows) + "};\n"


def c_words(name, f32):
    u = np.asarray(f32, dtype=np.float32).view(np.uint32)
    rows = [", ".join(f"0x{int(v):08x}u" for v in u[i:i + 8]) for i in range(0, len(u), 8)]
    return f"MLOPS_QTABLE uint32_t {name}[{len(u)}] = {{\n  " + ",\n  ".join(rows) + "};\n"


def render():
    parts = []
    for signed, tag in ((True, "S"), (False, "U")):
        qmap = dynamic_map(signed)
        T = thresholds(qmap)
        assert np.all(np.diff(T.astype(np.float64)) > 0)
        # thr[c] = T[c + 1] (c = 0..255), T[256] = +inf
        thr = np.concatenate([T, [np.float32(np.inf)]]).astype(np.float32)
        bk = buckets(qmap, T, False)
        if signed:
            bk = np.concatenate([bk, buckets(qmap, T, True)])
        parts.append(c_words(f"kQMap{tag}", qmap))
        parts.append(c_words(f"kQThr{tag}", thr))
        parts.append(c_bytes(f"kQBucket{tag}", bk, 16))
    head = f'''// GENERATED by tools/gen_qtables.py: do not edit. The table quantizer's data for the two
// standard dynamic maps (see the generator's docstring and quantize_table in optim_quant.h).
#pragma once
#include <stdint.h>

#if defined(__CUDACC__)
#define MLOPS_QTABLE static __device__ const __align__(16)
#else
#define MLOPS_QTABLE alignas(16) static const
#endif

namespace mlops::optim {{

constexpr uint32_t kQBucketLo = 0x{B_LO:04x}u;  // |x| bits >> 16 of bucket 0 (2^-23)
constexpr uint32_t kQBucketHi = 0x{B_HI:04x}u;  // of the last bucket ([1, 1.0078125))
constexpr int kQBuckets = {NB};            // buckets a sign
constexpr int kQBucketBytesS = {2 * NB + (-2 * NB) % 16};  // signed map: + then - buckets, padded to 16
constexpr int kQBucketBytesU = {NB + (-NB) % 16};

'''
    return head + "\n".join(parts) + "\n}  // namespace mlops::optim\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="exit 1 when the header differs")
    a = ap.parse_args()
    text = render()
    if a.check:
        sys.exit(0 if OUT.read_text() == text else 1)
    OUT.write_text(text)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

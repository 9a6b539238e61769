#!/bin/bash
# Session 13, norm device call (planned as GPU run 74; one H200, <= 300 s; NOT RUN in session 13: no device was
# lent): the candidates r16lx2g / r16lx4wg (bf16 INT8 block inverses and scales from int8_tab, NVFP4 near-path words
# by e2m1_word_finite; r16lx2f / r16lx4wf otherwise) against the planned picks, in one sm_90 wheel of this tree (the
# existing instances' SASS is 5c969d7's, so the planned rows are the old kernels), installed into a fresh target.
# Needs .carry/s13norm/sm90/ and .carry/s13norm/c80/ (nox -s gpu_build -- --tags sm90,c80 --package norm).
# (1) alone: bench_norm.py's harness (Bench.time = CUDA events, L2 flushed, 150 us lead; Bench.kernel_time = CUPTI),
#     bf16 HF order with a weight, 2048x4096 and 16384x4096: the planned calls (y / INT8 / NVFP4 / FP8 dynamic /
#     FP8 static) and INT8 / NVFP4 / FP8 by r16lx2 / r16lx2f / r16lx4we / r16lx4wf / r16lx2g / r16lx4wg, the whole
#     list twice (two processes) for the noise;
# (2) the GPU tests that name a g variant (-k "r16lx2g or r16lx4wg") under sm_90 (4 shards) and compute_80 (2), and
#     compute-sanitizer memcheck of the g kernels (a zero row and a tiny block: the INT8 division fallback), at once.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
rm -rf /tmp/s13n /tmp/s13c
inst ".carry/s13norm/sm90/mlops_norm-*.whl" /tmp/s13n
inst ".carry/s13norm/c80/mlops_norm-*.whl" /tmp/s13c
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
cat > /tmp/s13n_bench.py <<'PY'
import sys
import torch
from mlops_bench import Bench
import mlops.norm as mn
rnd = sys.argv[1]
ops = mn._ops
b = Bench("norm", lead_us=150.0)
b.header()
names = [v["name"] for v in mn.norm_variants()]
sms = torch.cuda.get_device_properties(0).multi_processor_count
dt = torch.bfloat16
V = ("r16lx4we", "r16lx4wf", "r16lx4wg", "r16lx2", "r16lx2f", "r16lx2g")
cases = [("planned", q) for q in (None, "int8", "nvfp4", "fp8", "fp8_static")]
cases += [(v, q) for q in ("int8", "nvfp4") for v in V] + [(v, "fp8") for v in ("r16lx4wg", "r16lx2g")]
for T, H in ((2048, 4096), (16384, 4096)):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, H, device="cuda", dtype=dt, generator=g)
    w = torch.randn(H, device="cuda", dtype=dt, generator=g)
    s = torch.tensor([0.02], device="cuda")
    e = x.element_size()
    qb = {None: T * H * e, "int8": T * H + T * H // 16 * 4, "nvfp4": T * H // 2 + T * H // 16, "fp8": T * H + 4 * T,
          "fp8_static": T * H}
    for name, q in cases:
        var = {} if name == "planned" else {"variant": name}
        kw = {} if q is None else {"quant": "fp8", "scale": s} if q == "fp8_static" else {"quant": q}
        code = ops._QUANT["fp8_dynamic" if q == "fp8" else q]
        plan = names[ops.C.plan_call(T, H, ops._KIND["rms"], ops._DTYPE[dt], False, code, sms)]
        fn = lambda: mn.rms_norm(x, w, **kw, **var)  # noqa: E731
        kt = b.kernel_time(fn)
        t = b.time(fn)
        case = "rms_norm" if q is None else f"rms_norm+{q}"
        b.record(case=case + ("" if name == "planned" else "_variant"), shape=f"{T}x{H}", round=rnd,
                 impl=plan if name == "planned" else name, seconds=t, bytes=T * H * e + H * e + qb[q],
                 planner=plan, kernel_us=round(kt * 1e6, 2) if kt else None)
PY
for rnd in 1 2; do
  MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/s13n:$PWD/tools/testing timeout 70 python3 /tmp/s13n_bench.py $rnd >> $R/bench.log 2>&1
  echo "bench round $rnd rc=$? rows=$(grep -c '"case"' $R/bench.log) [${SECONDS}s]" >> $R/summary.txt
done
L=$((270 - SECONDS)); [ $L -gt 150 ] && L=150
shards sm90 norm /tmp/s13n 4 $L -k "r16lx2g or r16lx4wg"
shards c80 norm /tmp/s13c 2 $L -k "r16lx2g or r16lx4wg"
( PYTHONPATH=/tmp/s13n timeout $((L - 5)) compute-sanitizer --tool memcheck --error-exitcode 9 python3 -c '
import torch, mlops.norm as mn
x = torch.randn(2501, 4096, dtype=torch.bfloat16, device="cuda"); w = torch.randn(4096, dtype=torch.bfloat16, device="cuda")
x[7, :] = 0.0; x[9, 64:80] = 1e-38  # a zero row and a tiny block: the INT8 division fallback
for v in ("r16lx4wg", "r16lx2g"):
    for kw in ({"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "int8", "return_y": True}, {"quant": "nvfp4", "scale": x.new_tensor(0.5, dtype=torch.float32)}):
        mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize(); print("ran")' > $R/san-memcheck.log 2>&1
  echo "sanitizer memcheck rc=$? $(grep -E 'ERROR SUMMARY|^ran' $R/san-memcheck.log | tr '\n' ' ' | cut -c1-200) [${SECONDS}s]" >> $R/summary.txt ) &
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r

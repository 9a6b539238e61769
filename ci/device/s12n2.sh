#!/bin/bash
# Session 12, norm device call 2 (one H200, 200 s): the "lxp" candidates (r16lxp2 / r16lxp4 / r16lxp8: r16lx4w's
# row split on a persistent grid of SMs x 2 / 4 / 8 CTAs, rows streamed through a ring of 4 / 3 / 2 shared-memory
# stages by cp.async.bulk + mbarrier on sm_90). Installed into a fresh target (/tmp/s12n: s12n1.sh's /tmp/m held
# another package's mlops/ on the warm machine).
# (1) alone: a short bench on bench_norm.py's harness (tools/testing/mlops_bench.py: Bench.time = CUDA events,
#     L2 flushed, 150 us lead; Bench.kernel_time = CUPTI), bf16, y / INT8 / NVFP4 / FP8 dynamic / FP8 static,
#     planned and by variant, 2048x4096 then 16384x4096 (no torch.compile peers: the call is short);
# (2) every GPU test that names an lxp variant (-k r16lxp) in 4 shards, beside compute-sanitizer racecheck and
#     memcheck of the lxp kernels at 2501x4096 (the ring wraps in every variant).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system CUDA_CACHE_MAXSIZE=4294967296
R=$OUT/r; mkdir -p $R/bench; source ci/device/lib.sh
rm -rf /tmp/s12n; inst ".carry/s12norm/sm90/mlops_norm-*.whl" /tmp/s12n
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
cat > /tmp/s12n_bench.py <<'PY'
import torch
from mlops_bench import Bench
import mlops.norm as mn
ops = mn._ops
b = Bench("norm", lead_us=150.0)
b.header()
names = [v["name"] for v in mn.norm_variants()]
sms = torch.cuda.get_device_properties(0).multi_processor_count
dt = torch.bfloat16
for T, H, impls in ((2048, 4096, ("planned", "r16lxp2", "r16lxp4", "r16lxp8", "r16lx4we", "r16lx4wf", "r16lx2")),
                    (16384, 4096, ("planned", "r16lxp2", "r16lxp4", "r16lxp8"))):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(T, H, device="cuda", dtype=dt, generator=g)
    w = torch.randn(H, device="cuda", dtype=dt, generator=g)
    s = torch.tensor([0.02], device="cuda")
    e = x.element_size()
    qb = {None: T * H * e, "int8": T * H + T * H // 16 * 4, "nvfp4": T * H // 2 + T * H // 16, "fp8": T * H + 4 * T,
          "fp8_static": T * H}
    for name in impls:
        var = {} if name == "planned" else {"variant": name}
        for q in (None, "int8", "nvfp4", "fp8", "fp8_static"):
            kw = {} if q is None else {"quant": "fp8", "scale": s} if q == "fp8_static" else {"quant": q}
            code = ops._QUANT["fp8_dynamic" if q == "fp8" else q]
            plan = names[ops.C.plan_call(T, H, ops._KIND["rms"], ops._DTYPE[dt], False, code, sms)]
            fn = lambda: mn.rms_norm(x, w, **kw, **var)  # noqa: E731
            kt = b.kernel_time(fn)
            t = b.time(fn)
            case = "rms_norm" if q is None else f"rms_norm+{q}"
            b.record(case=case + ("" if name == "planned" else "_variant"), shape=f"{T}x{H}",
                     impl=plan if name == "planned" else name, seconds=t, bytes=T * H * e + H * e + qb[q],
                     planner=plan, kernel_us=round(kt * 1e6, 2) if kt else None)
PY
MLOPS_BENCH_OUT=$R/bench PYTHONPATH=/tmp/s12n:$PWD/tools/testing timeout 95 python3 /tmp/s12n_bench.py > $R/bench.log 2>&1
echo "bench rc=$? rows=$(grep -c '"case"' $R/bench.log) [${SECONDS}s]" >> $R/summary.txt
L=$((185 - SECONDS)); [ $L -gt 120 ] && L=120
shards sm90 norm /tmp/s12n 4 $L -k r16lxp
( for tool in racecheck memcheck; do
    PYTHONPATH=/tmp/s12n timeout $((L / 2 - 2)) compute-sanitizer --tool $tool --error-exitcode 9 python3 -c '
import torch, mlops.norm as mn
x = torch.randn(2501, 4096, dtype=torch.bfloat16, device="cuda"); w = torch.randn(4096, dtype=torch.bfloat16, device="cuda")
for v in ("r16lxp2", "r16lxp4", "r16lxp8"):
    for kw in ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "fp8"}):
        mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize(); print("ran")' > $R/san-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^ran' $R/san-$tool.log | tr '\n' ' ' | cut -c1-200) [${SECONDS}s]" >> $R/summary.txt
  done ) &
wait; echo "tests done at ${SECONDS}s" >> $R/summary.txt
sort $R/tests.txt > $R/tests-sorted.txt
cd $OUT && tar czf r.tgz r && cat r/summary.txt r/tests-sorted.txt; rm -rf r

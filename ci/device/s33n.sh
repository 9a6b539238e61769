#!/bin/bash
# Session 33 (one H200, <= 560 s): issue 2's quantized outputs at few rows. The "u" variants (lu2m: units / 2 warps a
# row, 2 units a warp; lu2mp: the same with w loaded with x; lu4mp: 4 units a warp, w loaded with x) beside the planned
# call (r16l / r16lw at H 2048, r16lx4we / wg at 4096, r32lx4we / wg at 8192), y and every quantized output.
#   (1) bench_norm.py --variants at T 1 / 8 / 128 x H 2048 / 4096 / 8192, twice (two processes: the spread);
#   (2) the GPU tests of the new variants (test_norm_gpu.py -k lu) on the sm90 wheel and on the c61s one (compute_61's
#       code path as sm_90 SASS), with the C API's variant-table test; (3) memcheck + racecheck of one call of each new
#       kernel, alongside.
# Wheels: .carry/s33n/sm90/mlops_norm-*.whl, .carry/s33n/c61s/mlops_norm-*.whl. Everything under /tmp/rn, returned
# as $OUT/n.tgz; a summary printed (summary.txt: one line a bench case and shape, the planned call and each variant).
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn
rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/n90 .carry/s33n/sm90/mlops_norm-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/n61 .carry/s33n/c61s/mlops_norm-*.whl
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
S=1x2048,8x2048,128x2048,1x4096,8x4096,128x4096,1x8192,8x8192,128x8192
bench() {  # bench NAME LIMIT [bench args...]
  local n=$1-$SECONDS l=$2; shift 2
  mkdir -p $R/$n
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=/tmp/n90:$PWD/tools/testing timeout $l python3 packages/norm/bench/bench_norm.py "$@" \
    > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
}
for i in 1 2; do
  bench round$i 150 --shapes $S --variants --variant-names lu2m,lu2mp,lu4mp
done
# (2) tests: 3 shards on sm90, 1 on c61s (-k lu), the sanitizers beside them
L=$((540 - SECONDS)); [ $L -lt 30 ] && L=30
K="lu"
shard() {  # shard TARGET TAG I N
  ( PYTHONPATH=$1:$PWD/tools/testing MLOPS_ARCH_TAG=$2 MLOPS_SHARD=$3/$4 timeout $L python3 -m pytest -q \
      --tb=short -p no:cacheprovider -p mlops_shard packages/norm/tests/test_norm_gpu.py -k "$K" > $R/tests-$2-$3.log 2>&1
    echo "tests $2 shard $3/$4 rc=$? $(grep -E 'passed|failed|error' $R/tests-$2-$3.log | tail -1 | cut -c1-140) at ${SECONDS}s" >> $R/tests.txt ) &
}
shard /tmp/n90 sm90 0 3; shard /tmp/n90 sm90 1 3; shard /tmp/n90 sm90 2 3
shard /tmp/n61 c61s 0 1
cat > $R/sanitize.py <<'EOF'
# One call of each new kernel: lu2m / lu2mp / lu4mp at 3 x (2048, 4096, 8192), bf16 and fp16, y and every quantized output.
import torch
import mlops.norm as mn
for dt in (torch.bfloat16, torch.float16):
    for H in (2048, 4096, 8192):
        x, w = torch.randn(3, H).to(dt).cuda(), torch.randn(H).to(dt).cuda()
        s = torch.tensor(0.02, device="cuda")
        for v in ("lu2m", "lu2mp", "lu4mp"):
            for kw in ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "fp8"}, {"quant": "fp8", "scale": s}):
                mn.rms_norm(x, w, variant=v, **kw)
torch.cuda.synchronize()
print("sanitize calls done")
EOF
for tool in memcheck racecheck; do
  ( timeout $L env PYTHONPATH=/tmp/n90 compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py \
      > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|calls done' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-160) at ${SECONDS}s" >> $R/phases.txt ) &
done
wait
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
python3 - > $R/summary.txt <<'EOF'
import glob, json, os
rows = {}
for d in sorted(glob.glob("/tmp/rn/round*/")):
    rnd = os.path.basename(d.rstrip("/")).split("-")[0]
    for f in glob.glob(d + "*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            c = r.get("case", "")
            if r.get("impl") == "mlops" and c in ("rms_norm", "rms_norm+int8", "rms_norm+nvfp4", "rms_norm+fp8", "rms_norm+fp8_static"):
                rows.setdefault((r["shape"], c.replace("rms_norm", "") or "y"), {}).setdefault("planned", []).append(r["us"])
            if c.endswith("_variant") and not c.startswith("add"):
                rows.setdefault((r["shape"], c[8:-8] or "y"), {}).setdefault(r["impl"], []).append(r["us"])
for (shape, case), v in rows.items():
    print(f"{shape:9s} {case:12s}", "  ".join(f"{k}={'/'.join(str(u) for u in us)}" for k, us in v.items()))
EOF
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n.tgz rn

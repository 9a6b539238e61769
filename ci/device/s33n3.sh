#!/bin/bash
# Session 33, third call (one H200, <= 560 s): add + norm on lu2mp (kRes: the residual loaded with x, x + residual
# rounded, written to residual_out, normed), planned below 2 rows an SM for lean RMSNorm calls with a residual.
#   (1) bench_norm.py's planned rows (add_rms_norm beside compile(add + HF RMSNorm), y and the quantized outputs) at
#       T 1 / 8 / 128 / 256 x H 2048 / 4096 / 8192 and the control 2048x4096, before (.carry/s33n2/sm90: add + norm on
#       the shape planner's w8c2 / w8) and new (.carry/s33n3/sm90) in turn, 3 rounds each, interleaved;
#   (2) on the new wheel: test_norm_gpu.py -k "lu or planned or few_rows or graph or sanitizer" (sm90, 3 shards), the
#       c61s wheel -k "lu_add_norm or (features and lu2mp)"; test_norm_compile.py + test_norm_errors.py; the planner
#       tests; (3) memcheck + racecheck of lu2mp's add + norm calls (every output, in place too).
# Everything under /tmp/rn3, returned as $OUT/n3.tgz; summary.txt: a line a case and shape, before / new per round.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn3
rm -rf $R; mkdir -p $R
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nb .carry/s33n2/sm90/mlops_norm-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/nn .carry/s33n3/sm90/mlops_norm-*.whl
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/n61 .carry/s33n3/c61s/mlops_norm-*.whl
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
S=1x2048,8x2048,128x2048,256x2048,1x4096,8x4096,128x4096,256x4096,1x8192,8x8192,128x8192,256x8192,2048x4096
bench() {  # bench NAME TARGET LIMIT [bench args...]
  local n=$1-$SECONDS t=$2 l=$3; shift 3
  mkdir -p $R/$n
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=$t:$PWD/tools/testing timeout $l python3 packages/norm/bench/bench_norm.py "$@" \
    > $R/$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
}
for i in 1 2 3; do
  bench before /tmp/nb 60 --shapes $S
  bench new /tmp/nn 60 --shapes $S
done
L=$((540 - SECONDS)); [ $L -lt 30 ] && L=30
t() {  # t NAME TARGET SHARD pytest-args...
  local n=$1 tg=$2 sh=$3; shift 3
  ( PYTHONPATH=$tg:$PWD/tools/testing MLOPS_ARCH_TAG=${n%%-*} MLOPS_SHARD=$sh timeout $L python3 -m pytest -q --tb=short \
      -p no:cacheprovider "$@" > $R/tests-$n.log 2>&1
    echo "tests $n rc=$? $(grep -E 'passed|failed|error' $R/tests-$n.log | tail -1 | cut -c1-140) at ${SECONDS}s" >> $R/tests.txt ) &
}
K="lu or planned or few_rows or graph or sanitizer"
for i in 0 1 2; do t sm90-$i /tmp/nn $i/3 -p mlops_shard packages/norm/tests/test_norm_gpu.py -k "$K"; done
t c61s /tmp/n61 0/1 packages/norm/tests/test_norm_gpu.py -k "lu_add_norm or (features and lu2mp)"
t compile /tmp/nn 0/1 packages/norm/tests/test_norm_compile.py packages/norm/tests/test_norm_errors.py
t planner /tmp/nn 0/1 packages/norm/tests/test_norm_numerics.py -k planner
cat > $R/sanitize.py <<'PY'
# lu2mp's add + norm: every output, H 2048 / 4096 / 8192, bf16 / fp16, and the in-place form.
import torch
import mlops.norm as mn
for dt in (torch.bfloat16, torch.float16):
    for H in (2048, 4096, 8192):
        x, r, w = torch.randn(3, H).to(dt).cuda(), torch.randn(3, H).to(dt).cuda(), torch.randn(H).to(dt).cuda()
        s = torch.tensor(0.02, device="cuda")
        for kw in ({}, {"quant": "int8"}, {"quant": "nvfp4"}, {"quant": "fp8"}, {"quant": "fp8", "scale": s}):
            mn.rms_norm(x, w, residual=r, variant="lu2mp", **kw)
        mn.rms_norm(x, w, residual=r, residual_out=r, out=x, variant="lu2mp")
torch.cuda.synchronize()
print("sanitize calls done")
PY
for tool in memcheck racecheck; do
  ( timeout $L env PYTHONPATH=/tmp/nn compute-sanitizer --tool $tool --error-exitcode 9 python3 $R/sanitize.py \
      > $R/sanitizer-$tool.log 2>&1
    echo "sanitizer $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|calls done' $R/sanitizer-$tool.log | tr '\n' ' ' | cut -c1-160) at ${SECONDS}s" >> $R/phases.txt ) &
done
wait
sort $R/tests.txt > $R/tests-sorted.txt
grep -h "^FAILED\|^ERROR" $R/*.log 2>/dev/null | head -20 > $R/failures.txt
python3 - > $R/summary.txt <<'PY'
import glob, json, os
rows = {}
for d in sorted(glob.glob("/tmp/rn3/*-*/"), key=lambda p: int(p.rstrip("/").rsplit("-", 1)[1])):
    who = os.path.basename(d.rstrip("/")).split("-")[0]
    for f in glob.glob(d + "*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            c = r.get("case", "")
            if r.get("impl") == "mlops" and c in ("rms_norm", "add_rms_norm", "rms_norm+int8", "rms_norm+nvfp4", "rms_norm+fp8", "rms_norm+fp8_static"):
                rows.setdefault((r["shape"], c.replace("rms_norm", "") or "y"), {}).setdefault(who, []).append(r["us"])
            if c == "add_rms_norm" and r.get("impl") != "mlops":
                rows.setdefault((r["shape"], "add-peer"), {}).setdefault(who, []).append(r["us"])
for (shape, case), v in rows.items():
    print(f"{shape:9s} {case:12s}", "  ".join(f"{k}={'/'.join(str(u) for u in us)}" for k, us in v.items()))
PY
cat $R/gpu.txt $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/summary.txt
cd /tmp && tar czf $OUT/n3.tgz rn3

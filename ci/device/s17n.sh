#!/bin/bash
# Session 17, helper n (one H200, <= 240 s): LayerNorm's lean kernels (issue 2: LayerNorm ran w8c2 / w8, 0.68-0.70x
# F.layer_norm at H 8192 in GPU run 92). Run 98 ran this part with before = 7f1fba7's wheel and new = 91a0816's (the ln1 /
# ln2 / ln4w variants and their first planner block): every shape faster, F.layer_norm beaten everywhere. Now: before =
# .carry/s17n/before, 91a0816's wheel (md5 b62881b1...); new = .carry/s17n/new, fc8f61c's, md5 787fa237... (the planner
# after run 98: ln4w below 2 rows an SM, ln2 above at H 4096 / 8192, ln1 at H 2048; and ln4wp, ln4w with w and b loaded
# with x).
#   (1) bench A/B ($R/bench.py, below): bf16 LayerNorm with a bias at T x H, T in 1, 128, 2048, 16384, H in 2048,
#       4096, 8192: the planned call, F.layer_norm, ln1 / ln2 / ln4w (both wheels: a control) and ln4wp (new) named,
#       interleaved; before, new, before, new.
#   (2) the GPU tests of the new variants (test_norm_gpu.py -k: lean_layer_norm, and the ln rows of dtypes_and_shapes /
#       features) in 4 shards (fshards), (3) memcheck + racecheck of one call of each variant at each H
#       ($R/sanitize.py, below), beside the shards.
# Results: $OUT/r/n/ (n17.tgz of everything, summary.txt). DRY=1: print the commands only.
export PYTHONUNBUFFERED=1 MLOPS_TEST_CUDA=system
R=/tmp/rn17
run() { if [ -n "$DRY" ]; then echo "+ $*"; else "$@"; fi; }
rm -rf $R; mkdir -p $R; touch $R/phases.txt $R/tests.txt
source ci/device/lib.sh
[ -n "$DRY" ] && fshards() { echo "+ fshards $*"; } && ssanitize() { echo "+ ssanitize $*"; }
run inst ".carry/s17n/before/mlops_norm-*.whl" /tmp/nb17
run inst ".carry/s17n/new/mlops_norm-*.whl" /tmp/nn17
[ -z "$DRY" ] && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $R/gpu.txt
# the bench and the sanitizer calls (ci/device/ln_bench.py / ln_sanitize.py since session 18: s18.sh runs them too)
cp ci/device/ln_bench.py $R/bench.py
cp ci/device/ln_sanitize.py $R/sanitize.py
# (1) bench: 4 rounds, 32 s each at most
i=0
for t in before:/tmp/nb17 new:/tmp/nn17 before:/tmp/nb17 new:/tmp/nn17; do
  n=${t%%:*}-$i; i=$((i + 1))
  if [ -n "$DRY" ]; then
    echo "+ MLOPS_BENCH_OUT=$R/$n PYTHONPATH=${t#*:}:$PWD/tools/testing timeout 32 python3 $R/bench.py ${t%%:*}"
    continue
  fi
  MLOPS_BENCH_OUT=$R/$n PYTHONPATH=${t#*:}:$PWD/tools/testing timeout 32 python3 $R/bench.py ${t%%:*} \
    > $R/bench-$n.log 2>&1
  echo "bench $n rc=$? at ${SECONDS}s" >> $R/phases.txt
done
# (2) tests in 4 shards, (3) the sanitizers, at the same time, to 225 s of the script
L=$((225 - SECONDS)); [ $L -lt 30 ] && L=30
fshards ln packages/norm/tests/test_norm_gpu.py /tmp/nn17 4 $L -k \
  "lean_layer_norm or (dtypes_and_shapes and (ln1 or ln2 or ln4w)) or (features and (ln1 or ln2 or ln4w))"  # ln4w: ln4wp too
ssanitize /tmp/nn17 $((L / 2)) $R/sanitize.py
[ -n "$DRY" ] && exit 0
collect
# summary: us by shape and impl, one column a bench round; the new planned call against before's and F.layer_norm
python3 - > $R/summary.txt <<'PY'
import glob, json, os
runs = sorted(glob.glob("/tmp/rn17/*-*/"), key=lambda p: int(p.rstrip("/").rsplit("-", 1)[1]))
tab, picks = {}, {}
for i, d in enumerate(runs):
    for f in glob.glob(d + "*.jsonl"):
        for l in open(f):
            r = json.loads(l)
            if r.get("case") == "layer_norm_ab":
                tab.setdefault((r["shape"], r["impl"]), {})[i] = r["us"]
                if r["label"] == "new":
                    picks[r["shape"]] = r.get("planner")
print("rounds:", " ".join(os.path.basename(d.rstrip("/")) for d in runs))
for (shape, impl), v in sorted(tab.items(), key=lambda kv: (int(kv[0][0].split("x")[1]), int(kv[0][0].split("x")[0]), kv[0][1])):
    print(f"{shape:>11} {impl:>13}", " ".join(f"{v.get(i, '-'):>8}" for i in range(len(runs))),
          f"(new plan: {picks.get(shape)})" if impl == "planned" else "")
PY
cat $R/phases.txt $R/tests-sorted.txt $R/failures.txt $R/sanitizer.txt $R/summary.txt
mkdir -p $OUT/r/n && cp $R/summary.txt $OUT/r/n/ && (cd /tmp && tar czf $OUT/r/n/n17.tgz rn17)

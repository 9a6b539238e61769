#!/bin/bash
# Session 17, a part for ci/device/s15.sh (one H200, <= 120 s): ci/device/floor_probe.py on 7f1fba7's sm90 wheels
# (norm: .carry/s17p/sm90, vocab: .carry/s17v/before): the size-matched floors of 2048x4096 RMSNorm and the
# 32000 / 151936 x 4096 LM head beside F.rms_norm, cuBLAS and the planned calls. Results: $OUT/r/f/ (JSON lines, log).
export PYTHONUNBUFFERED=1
R=$OUT/r/f; mkdir -p $R
run() { if [ -n "$DRY" ]; then echo "+ $*"; else "$@"; fi; }
# one --target a wheel: pip skips mlops/ when a second wheel goes into the same target (run 97 lost mlops.vocab so)
run python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/f17n .carry/s17p/sm90/mlops_norm-*.whl
run python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/f17v .carry/s17v/before/mlops_vocab-*.whl
if [ -n "$DRY" ]; then echo "+ floor_probe.py --out $R"; exit 0; fi
PYTHONPATH=/tmp/f17n:/tmp/f17v:$PWD/tools/testing timeout 110 python3 ci/device/floor_probe.py --out $R > $R/floor.log 2>&1
echo "floor rc=$?"
python3 - "$R" <<'PY'
import glob, json, sys
for f in glob.glob(sys.argv[1] + "/*.jsonl"):
    for l in open(f):
        r = json.loads(l)
        if "us" in r:
            print(r["case"], r["shape"], "|", r["impl"], "|", r["us"], "|", r.get("frac_copy_bw"), "|",
                  r.get("half_peer_us", r.get("target_98_us")))
PY

#!/bin/bash
# Session 15, GPU run 83 (one H200, <= 150 s): ci/device/s15p.py's kernel timelines (torch.profiler, the GPU's own
# clocks) of the planned calls of the open targets, on session 14's last wheels (attention e866866 = da780c5's SASS,
# vocab eb20bc0, norm of run 81). Results: $OUT/s15p.jsonl and $OUT/s15p-*.log.
export PYTHONUNBUFFERED=1
inst() { python3 -m pip install -q --no-index --no-deps --no-compile --target $2 $1; }
# AW / VW / NW: other wheel folders (run 87: AW=.carry/s15c/attn VW=.carry/s15c/vocab, the wheels of 7ecf8ca)
inst "${AW:-.carry/s14attn3}/mlops_attention-*.whl" /tmp/a
inst "${VW:-.carry/s14vocab2}/mlops_vocab-*.whl" /tmp/v
inst "${NW:-.carry/s14norm2}/mlops_norm-*.whl" /tmp/n
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
for p in ${PARTS:-attention:/tmp/a vocab:/tmp/v norm:/tmp/n}; do
  PYTHONPATH=${p#*:} timeout 100 python3 ci/device/s15p.py $OUT/s15p.jsonl ${p%%:*} > $OUT/s15p-${p%%:*}.log 2>&1
  echo "${p%%:*} rc=$? at ${SECONDS}s"; cat $OUT/s15p-${p%%:*}.log | cut -c1-150
done

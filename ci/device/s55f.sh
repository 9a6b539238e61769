# Session 55, run 258 (planned): MLOPS_SAMPLE_NEAR_FINE=2 (sixteenths where they fit) against the (F = 1)
# default. .carry/s55f: base/ (0007653's default sm90 wheel), f2/ (0007653 with CUDAFLAGS=-DMLOPS_SAMPLE_NEAR_FINE=2),
# stp_base.gz / stp_f2.gz (0007653's probe, -DMLOPS_PROBE_T1024, without / with the macro).
# 1. ci/device/s47a.sh: the probes on their own rows, the bench's planned call (B = 1, 8, 64) in 3 alternating rounds,
# ab-f2.txt, the sampler GPU file whole on f2 (6 shards) and the sanitizers on the wide / tp3 subset;
# 2. bench_vocab.py --row-seeds 16 (top-p, penalties + top-p) on each side; 3. the probes on the rows of seeds 1001
# (a [6, 7) crossing) and 1006 ([7, 8)). Everything in $OUT/v.tgz and $OUT/rows/.
export PYTHONUNBUFFERED=1
CARRY=.carry/s55f SIDES="base f2" PROBES="base f2" TEST_SIDE=f2 ROUNDS=3 END=260 \
  SAN_K="test_cluster_sanitizer_subset and (wide or tp3) and not tp3g" bash ci/device/s47a.sh
mkdir -p $OUT/rows /tmp/rs
for s in base f2; do
  PYTHONPATH=/tmp/j-$s MLOPS_BENCH_OUT=$OUT/rows/sweep-$s timeout 150 python3 packages/vocab/bench/bench_vocab.py \
    --only sampling --batches 1 --modes top_p0.9,penalties_top_p0.9 --variants cluster16_wide --row-seeds 16 \
    > $OUT/rows/sweep-$s.log 2>&1
  echo "sweep $s rc=$? [${SECONDS}s]"
done
python3 -c "
import torch
for s in (1001, 1006):
    g = torch.Generator(device='cuda').manual_seed(s)
    (torch.randn(1, 151936, device='cuda', generator=g) * 3).cpu().numpy().tofile(f'/tmp/rs/rows-s{s}.f32')
"
for s in base f2; do
  for r in 1001 1006; do
    MLOPS_PROBE_ROWS=/tmp/rs/rows-s$r.f32 timeout 60 /tmp/stp_$s 1 > $OUT/rows/probe-$s-s$r.txt 2>&1
    echo "probe $s s$r rc=$? [${SECONDS}s]"
  done
done
grep -h '"rows"\|rows",' $OUT/rows/sweep-*/vocab-*.jsonl | cut -c1-400

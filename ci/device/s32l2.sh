#!/bin/bash
# Session 32, GPU run 173: where the kEarly refine's L2 throughput goes (ncu's breakdown of lts__throughput and
# dram__throughput, the L2 sectors by operation), beside SDPA's flash split-KV kernel on the same B8 L128K shape.
# W: the wheel's folder (default .carry/v4). Results: $OUT/l2-refine.txt, $OUT/l2-sdpa.txt.
set -u
OUT=${OUT:-/tmp}
W=${W:-.carry/v4}
python3 -m pip install -q --no-deps --target /tmp/s32 $W/mlops_attention-*.whl
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum"
M="$M,lts__t_sectors_op_atom.sum,lts__t_sectors_op_red.sum,lts__t_requests_srcunit_tex.sum,lts__t_sectors_srcunit_tex.sum"
M="$M,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:dram__throughput.avg.pct_of_peak_sustained_elapsed"
PYTHONPATH=/tmp/s32 timeout 150 ncu --clock-control none -k regex:refine_mma4_kernel -c 1 --metrics "$M" \
  python3 packages/attention/bench/profile_decode.py --B 8 --L 131072 --variant planner --exact > $OUT/l2-refine.txt 2>&1
echo "refine rc=$?"
cat > /tmp/sdpa_one.py <<'PY'
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
g = torch.Generator(device="cuda").manual_seed(1)
q = torch.randn(8, 32, 1, 128, device="cuda", generator=g).bfloat16()
k = torch.randn(8, 8, 131072, 128, device="cuda", generator=g).bfloat16()
v = torch.randn(8, 8, 131072, 128, device="cuda", generator=g).bfloat16()
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    for _ in range(2):
        F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
torch.cuda.synchronize()
PY
timeout 150 ncu --clock-control none -k regex:flash -c 2 --metrics "$M" python3 /tmp/sdpa_one.py > $OUT/l2-sdpa.txt 2>&1
echo "sdpa rc=$?"
for f in l2-refine l2-sdpa; do
  echo "== $f"; grep -E "^\s+(gpu__time|dram__|lts__)|  [a-z_]+ \(" $OUT/$f.txt | grep -v "^==PROF" | head -60
done

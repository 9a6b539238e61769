"""mma_pv4f+coarse_imma (the combine folded into the refine, session 13) under compute-sanitizer: B1 L16K-like work
(32 q / 8 kv heads, D 128, 520 refine items: refine_mma4_kernel<128, 8, true>, fold_zero_kernel in exact mode, the
coarse pass zeroing the counters in skip mode), scratch filled with garbage first; each decode == the host emulation
of the digits form."""
import torch

import mlops.attention as A

bad = 0
g = torch.Generator().manual_seed(13)
T = 16 * 1024 - 100
k, v = torch.randn(1, 8, T, 128, generator=g).bfloat16(), torch.randn(1, 8, T, 128, generator=g).bfloat16()
q = torch.randn(1, 32, 128, generator=g).bfloat16()
gc = A.encode(k.cuda(), v.cuda(), capacity=16512)
cc = A.encode(k, v, capacity=16512)
gc.scratch(32).fill_(0x5a)
for exact in (True, False):
    for rep in range(2):
        o = A.decode(q.cuda(), gc, exact=exact, out_dtype=torch.float32, variant="mma_pv4f+coarse_imma").cpu()
        ok = torch.equal(o, A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv="digits"))
        bad += not ok
        print("exact" if exact else "skip", rep, "same bits" if ok else "DIFFERS")
print("failed", bad)
raise SystemExit(1 if bad else 0)

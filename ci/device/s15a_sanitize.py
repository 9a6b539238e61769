"""Session 15, attention: the planned decode's kernels under compute-sanitizer (racecheck / memcheck) after the
split staging of refine_mma4_kernel (K part and V planes on their own mbarriers) and the shorter combine_warps_kernel.
Cases: 32 q / 8 kv heads, D 128, ~4K tokens with an odd count of closed groups (the last chunk has one group, so slices
past ng wait for the V planes without P V MMAs), and 8 q heads a kv head (two head passes: the K planes copied again on
the K barrier); the planner (variant 0: refine_mma4_kernel<128, 8, false, true>, combine_warps_kernel<128, true>) and
mma_pv4r, exact and skip, scratch filled with garbage first; each decode == the host emulation of the digits form."""
import torch

import mlops.attention as A

bad = 0
g = torch.Generator().manual_seed(15)
for hq, hk, T in ((32, 8, 4096 - 200), (32, 4, 4000)):
    k, v = torch.randn(1, hk, T, 128, generator=g).bfloat16(), torch.randn(1, hk, T, 128, generator=g).bfloat16()
    q = torch.randn(1, hq, 128, generator=g).bfloat16()
    gc = A.encode(k.cuda(), v.cuda(), capacity=(T // 128 + 2) * 128)
    cc = A.encode(k, v, capacity=(T // 128 + 2) * 128)
    gc.scratch(hq).fill_(0x5a)
    for exact in (True, False):
        ref = A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv="digits")
        for var in (None, "mma_pv4r+coarse_imma"):
            o = A.decode(q.cuda(), gc, exact=exact, out_dtype=torch.float32, variant=var).cpu()
            ok = torch.equal(o, ref)
            bad += not ok
            print(f"{hq}/{hk} T={T}", "exact" if exact else "skip", var or "planner", "same bits" if ok else "DIFFERS")
print("failed", bad)
raise SystemExit(1 if bad else 0)

"""Session 17, attention: the planner's refine_mma4_kernel<128, 8, false, true, true> (the kEarly instance: session 16
a2's front, planned on sm_90 at D 128 where the refine's CTAs take more than one round of items) under
compute-sanitizer (racecheck / memcheck). Cases: D 128, ~20 K tokens (8 kv heads: ~640 refine items against the H200's
528 resident CTAs, so more than one round), 32 q heads (one head pass) and 64 q heads (two head passes: the K planes
copied again), exact and skip (its flags' barrier kept), scratch filled with garbage first; each decode == the host
emulation of the digits form. Prints the refine items against the resident CTAs it assumed (4 an SM). Session 29: a
third case of 259 slots a row (16 q / 4 kv heads, ~66 K tokens), whose combine is combine_staged_kernel (bulk copies
into a ring of shared memory stages)."""
import torch

import mlops.attention as A

bad = 0
sms = torch.cuda.get_device_properties(0).multi_processor_count
g = torch.Generator().manual_seed(17)
for hq, hk, T, modes in ((32, 8, 20000, (True, False)), (64, 8, 20000, (True,)), (16, 4, 66100, (True,))):
    k, v = torch.randn(1, hk, T, 128, generator=g).bfloat16(), torch.randn(1, hk, T, 128, generator=g).bfloat16()
    q = torch.randn(1, hq, 128, generator=g).bfloat16()
    gc = A.encode(k.cuda(), v.cuda(), capacity=(T // 128 + 2) * 128)
    cc = A.encode(k, v, capacity=(T // 128 + 2) * 128)
    gc.scratch(hq).fill_(0x5a)
    slots = 1 + ((T - 128) // 128 + 1) // 2  # the BF16 item and the chunks of 2 closed groups (about)
    print(f"{hq}/{hk} T={T}: ~{hk * slots} refine items, {4 * sms} resident CTAs (4 an SM)")
    for exact in modes:
        ref = A.decode(q, cc, exact=exact, out_dtype=torch.float32, pv="digits")
        o = A.decode(q.cuda(), gc, exact=exact, out_dtype=torch.float32).cpu()
        ok = torch.equal(o, ref)
        bad += not ok
        print(f"{hq}/{hk} T={T}", "exact" if exact else "skip", "planner", "same bits" if ok else "DIFFERS")
print("failed", bad)
raise SystemExit(1 if bad else 0)

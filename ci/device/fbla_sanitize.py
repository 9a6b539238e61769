"""mma_pv+coarse_imma alone under compute-sanitizer (racecheck / memcheck), on the shapes of
test_attention_gpu.py::test_sanitizer_subset plus a pass of 8 q heads a kv head (its second pass copies
the K planes again over the first pass's sums): each decode == the host emulation of the digits form."""
import torch

import mlops.attention as A

V = "mma_pv+coarse_imma"
bad = 0
for mode in ("3+3", "4+2"):
    for D, G, T in ((64, 5, 700), (128, 2, 700), (128, 8, 1500)):
        g = torch.Generator().manual_seed(D + G)
        k, v = torch.randn(2, 2, T, D, generator=g).bfloat16(), torch.randn(2, 2, T, D, generator=g).bfloat16()
        q = torch.randn(2, 2 * G, D, generator=g).bfloat16()
        gc = A.encode(k.cuda(), v.cuda(), [T, 130], mode=mode)
        cc = A.encode(k, v, [T, 130], mode=mode)
        for exact in (True, False):
            o = A.decode(q.cuda(), gc, exact=exact, gap=4.0, variant=V).cpu()
            ok = torch.equal(o.view(torch.int16), A.decode(q, cc, exact=exact, gap=4.0, pv="digits").view(torch.int16))
            bad += not ok
            print(mode, D, G, exact, "same bits" if ok else "DIFFERS")
print("failed", bad)
raise SystemExit(1 if bad else 0)

"""Session 12: the mma_pv4 variants (or $FBLA_SANITIZE_VARIANTS, comma-separated) under compute-sanitizer, on
ci/device/fbla_sanitize.py's shapes (incl. 8 q heads a kv head: a second pass copies the K planes again over the
first pass's sums and digits): each decode == the host emulation of the digits form."""
import os

import torch

import mlops.attention as A

VS = os.environ.get("FBLA_SANITIZE_VARIANTS", "mma_pv4+coarse_imma,mma_pv4w+coarse_imma").split(",")
bad = 0
for mode in ("3+3", "4+2"):
    for D, G, T in ((64, 5, 700), (128, 2, 700), (128, 8, 1500)):
        g = torch.Generator().manual_seed(D + G)
        k, v = torch.randn(2, 2, T, D, generator=g).bfloat16(), torch.randn(2, 2, T, D, generator=g).bfloat16()
        q = torch.randn(2, 2 * G, D, generator=g).bfloat16()
        gc = A.encode(k.cuda(), v.cuda(), [T, 130], mode=mode)
        cc = A.encode(k, v, [T, 130], mode=mode)
        for exact in (True, False):
            ref = A.decode(q, cc, exact=exact, gap=4.0, pv="digits").view(torch.int16)
            for V in VS:
                o = A.decode(q.cuda(), gc, exact=exact, gap=4.0, variant=V).cpu()
                ok = torch.equal(o.view(torch.int16), ref)
                bad += not ok
                print(V, mode, D, G, exact, "same bits" if ok else "DIFFERS")
print("failed", bad)
raise SystemExit(1 if bad else 0)

"""Session 17 (helper n): one LayerNorm call of each lean LayerNorm variant (ln1 / ln2 / ln4w) at each H it takes,
bf16 with a bias and fp16 without, 3 rows (a partial CTA), for compute-sanitizer memcheck / racecheck (the unit
sums' two meetings in shared memory)."""

import torch

import mlops.norm as mn

names = [v["name"] for v in mn.norm_variants()]
for v in [n for n in ("ln1", "ln2", "ln4w", "ln4wp") if n in names]:  # run 98's wheel had no ln4wp
    for H in (2048, 4096, 8192):
        for dt, bias in ((torch.bfloat16, True), (torch.float16, False)):
            x, w = torch.randn(3, H).to(dt).cuda(), torch.randn(H).to(dt).cuda()
            b = torch.randn(H).to(dt).cuda() if bias else None
            y = mn.layer_norm(x, w, b, variant=v)
            e = mn.layer_norm(x.cpu(), w.cpu(), None if b is None else b.cpu())
            assert torch.equal(y.cpu().view(torch.int16), e.view(torch.int16)), (v, H, dt)
torch.cuda.synchronize()
print("sanitize calls done")

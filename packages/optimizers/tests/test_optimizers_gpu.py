"""GPU: the kernels against the host emulation bit for bit (every algorithm, parameter
dtype / precision mode, kernel variant, ragged, unaligned and many-tensor layouts), the same
trajectories under CUDA-graph capture (device step counters and lr), GradScaler skipping,
stochastic rounding (reproducible, unbiased, GPU == CPU), the global norm (GPU == host).
Under nox -s gpu_tests these run once per build (sm_90 SASS, and compute_61 / 70 / 75 / 80 PTX
through the driver JIT), so the pre-sm_80 bf16 rounding path is compared too."""

import mlops.optimizers as mo
import pytest
import torch
from mlops_testing import assert_bits_equal, gpu_arch_tag, requires_cuda

pytestmark = requires_cuda

# ragged sizes, one above a chunk (16384), one tiny, one 2-D
SIZES = [(1000,), (7,), (33, 65), (40000,), (256,), (16384,)]


def params_on(device, sizes=SIZES, dtype=torch.float32, seed=0, unaligned=False):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, s in enumerate(sizes):
        v = torch.randn(s, generator=g).to(dtype)
        if unaligned and i % 2 == 0:  # a leaf view 2 bytes / 4 bytes past an aligned address
            buf = torch.empty(v.numel() + 1, dtype=dtype)
            buf[1:].copy_(v.reshape(-1))
            v = buf.to(device)[1:].view(s)
        out.append(v.to(device).detach().requires_grad_())
    return out


def set_grads(ps, step, seed=5, scale=1.0):
    g = torch.Generator().manual_seed(seed * 7919 + step)
    for p in ps:
        p.grad = (torch.randn(p.shape, generator=g) * scale).to(p.dtype).to(p.device)


def compare(opt_c, ps_c, opt_g, ps_g, what):
    for i, (pc, pg) in enumerate(zip(ps_c, ps_g)):
        assert_bits_equal(pg.detach(), pc.detach(), f"{what}: param {i}")
        sc, sg = opt_c.state[pc], opt_g.state[pg]
        assert set(sc) == set(sg)
        for k in sc:
            assert_bits_equal(sg[k], sc[k], f"{what}: state {k} of param {i}")


CONFIGS = {
    "adamw": (mo.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
    "adam_l2_amsgrad_maximize": (mo.Adam, {"lr": 1e-2, "weight_decay": 0.05, "amsgrad": True, "maximize": True}),
    "adamw_8bit": (mo.AdamW, {"lr": 1e-2, "state_8bit": True}),
    # the 8-bit kernel's AdamW loop with a clip coefficient, and its general loop (L2, maximize)
    "adamw_8bit_clip": (mo.AdamW, {"lr": 1e-2, "state_8bit": True, "max_grad_norm": 5.0}),
    "adam_8bit_l2_maximize": (mo.Adam, {"lr": 1e-2, "weight_decay": 0.05, "maximize": True, "state_8bit": True}),
    "adamw_clip": (mo.AdamW, {"lr": 1e-2, "max_grad_norm": 5.0}),
    "sgd_nesterov": (mo.SGD, {"lr": 1e-2, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    "sgd_dampening": (mo.SGD, {"lr": 1e-2, "momentum": 0.9, "dampening": 0.3}),
    "sgd_plain": (mo.SGD, {"lr": 1e-2}),
    "lion": (mo.Lion, {"lr": 1e-3, "weight_decay": 0.1}),
}
PRECISIONS = {
    "fp32": (torch.float32, {}),
    "bf16_master": (torch.bfloat16, {"master_weights": True}),
    "fp16_master": (torch.float16, {"master_weights": True}),
    "bf16_sr": (torch.bfloat16, {"stochastic_rounding": True}),
    "bf16_rne": (torch.bfloat16, {}),
}


@pytest.mark.parametrize("variant", ["occ3", "occ2"])
@pytest.mark.parametrize("precision", sorted(PRECISIONS))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_kernels_equal_host_emulation(config, precision, variant):
    cls, kw = CONFIGS[config]
    dtype, pkw = PRECISIONS[precision]
    ps_c = params_on("cpu", dtype=dtype)
    ps_g = params_on("cuda", dtype=dtype, unaligned=(variant == "occ2"))
    oc = cls(ps_c, **kw, **pkw, seed=3)
    og = cls(ps_g, **kw, **pkw, seed=3, variant=variant)
    for s in range(12):
        set_grads(ps_c, s)
        set_grads(ps_g, s)
        oc.step()
        og.step()
    compare(oc, ps_c, og, ps_g, f"{config}/{precision}/{variant} [{gpu_arch_tag()}]")


def test_ten_thousand_small_tensors_equal_host():
    sizes = [(1024,)] * 9900 + [(17,)] * 100
    ps_c, ps_g = params_on("cpu", sizes), params_on("cuda", sizes)
    oc, og = mo.AdamW(ps_c, lr=1e-2), mo.AdamW(ps_g, lr=1e-2)
    for s in range(3):
        set_grads(ps_c, s)
        set_grads(ps_g, s)
        oc.step()
        og.step()
    compare(oc, ps_c, og, ps_g, "many tensors")


def test_grad_norm_equals_host():
    ps_c = params_on("cpu", SIZES + [(300000,)], dtype=torch.float32)
    ps_g = params_on("cuda", SIZES + [(300000,)], dtype=torch.float32)
    set_grads(ps_c, 0, scale=2.0)
    set_grads(ps_g, 0, scale=2.0)
    n_c = mo.clip_grad_norm_(ps_c, 1.0)
    n_g = mo.clip_grad_norm_(ps_g, 1.0)
    assert_bits_equal(n_g, n_c, "norm")
    for pc, pg in zip(ps_c, ps_g):
        assert_bits_equal(pg.grad, pc.grad, "clipped grads")
    for dt in (torch.bfloat16, torch.float16):
        a, b = params_on("cpu", SIZES, dtype=dt), params_on("cuda", SIZES, dtype=dt)
        set_grads(a, 1)
        set_grads(b, 1)
        assert_bits_equal(mo.clip_grad_norm_(b, 1.0), mo.clip_grad_norm_(a, 1.0), f"norm {dt}")


@pytest.mark.parametrize("config", ["adamw", "adamw_8bit", "sgd_nesterov", "lion", "adamw_clip"])
def test_cuda_graph_capture_same_trajectory(config):
    """A whole optimizer step captured once and replayed: step counters and lr live on the
    device, so each replay is the next step; lr changes between replays (lr.fill_) are seen."""
    cls, kw = CONFIGS[config]
    base_lr = kw["lr"]
    kw = dict(kw, lr=torch.tensor(base_lr, device="cuda"))
    ps_e, ps_g = params_on("cuda", seed=1), params_on("cuda", seed=1)
    oe, og = cls(ps_e, **kw), cls(ps_g, **dict(kw, lr=kw["lr"].clone()))
    # static gradients for the graph: filled in place before each replay
    set_grads(ps_g, 0)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        og.step()  # warm-up: states and tables are built outside the graph
    torch.cuda.current_stream().wait_stream(s)
    set_grads(ps_e, 0)
    oe.step()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        og.step()
    for step in range(1, 15):
        lr_now = base_lr * (0.5 if step > 7 else 1.0)
        oe.param_groups[0]["lr"].fill_(lr_now)
        og.param_groups[0]["lr"].fill_(lr_now)
        set_grads(ps_e, step)
        g = torch.Generator().manual_seed(5 * 7919 + step)
        for p in ps_g:
            p.grad.copy_((torch.randn(p.shape, generator=g)).to(p.dtype))
        oe.step()
        graph.replay()
    torch.cuda.synchronize()
    for i, (a, b) in enumerate(zip(ps_e, ps_g)):
        assert_bits_equal(b.detach(), a.detach(), f"graph {config} param {i}")
    assert float(og.state[ps_g[0]]["step"]) == 15.0


def test_grad_scaler_skips_inf_steps():
    """torch.amp.GradScaler with the optimizer taking grad_scale / found_inf: a step whose
    gradients hold inf or nan changes nothing (params, moments, step counts), and a finite
    step equals the unscaled update (power-of-two scales divide exactly)."""
    ps_s, ps_r = params_on("cuda", seed=2), params_on("cuda", seed=2)
    os_, or_ = mo.AdamW(ps_s, lr=1e-2), mo.AdamW(ps_r, lr=1e-2)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0**10, growth_interval=1000)
    for step in range(8):
        scaler.scale(torch.ones((), device="cuda"))  # as scaler.scale(loss): creates the scale tensor
        set_grads(ps_r, step)
        g = torch.Generator().manual_seed(5 * 7919 + step)
        for p in ps_s:
            p.grad = (torch.randn(p.shape, generator=g) * scaler.get_scale()).to(p.device)
        bad = step in (3, 6)
        if bad:
            ps_s[step % len(ps_s)].grad.view(-1)[0] = float("inf") if step == 3 else float("nan")
        before = [p.detach().clone() for p in ps_s]
        steps_before = float(os_.state[ps_s[0]]["step"]) if os_.state else 0.0
        scaler.step(os_)
        scaler.update()
        if bad:
            for b, p in zip(before, ps_s):
                assert_bits_equal(p.detach(), b, "skipped step")
            assert float(os_.state[ps_s[0]]["step"]) == steps_before
        else:
            or_.step()
    for i, (a, b) in enumerate(zip(ps_r, ps_s)):
        assert_bits_equal(b.detach(), a.detach(), f"scaled param {i}")
    assert scaler.get_scale() == 2.0**10 / 4  # halved at each inf/nan step


def test_stochastic_rounding_gpu_unbiased_reproducible_and_equal_cpu():
    n, steps, lr = 1 << 20, 100, 1e-4

    def train(device, seed, n=n):
        p = torch.ones(n, dtype=torch.bfloat16, device=device, requires_grad=True)
        opt = mo.SGD([p], lr=lr, stochastic_rounding=True, seed=seed)
        for _ in range(steps):
            p.grad = torch.ones(n, dtype=torch.bfloat16, device=device)
            opt.step()
        return p.detach()

    a, b, c = train("cuda", 11), train("cuda", 11), train("cuda", 12)
    assert torch.equal(a, b) and not torch.equal(a, c)
    expect = 1.0 - steps * lr
    err = float(a.float().mean()) - expect
    assert abs(err) < 2e-5, err  # sd of the mean of 2^20 elements: ~1e-6
    small = train("cpu", 11, n=1 << 12)  # the rounding bits depend on (seed, step, tensor, index) alone
    assert_bits_equal(a[: 1 << 12].cpu(), small, "SR GPU == host emulation")


@pytest.mark.parametrize("config, precision", [
    ("adamw", "fp32"), ("adam_l2_amsgrad_maximize", "bf16_master"), ("adamw_8bit", "fp32"),
    ("adamw_clip", "bf16_sr"), ("sgd_nesterov", "fp16_master"), ("lion", "bf16_rne"),
])
def test_sanitizer_subset_every_kernel(config, precision):
    """Small, fast: every kernel instance family once (ragged and unaligned rows, the norm, the
    step counters), so compute-sanitizer memcheck / racecheck (ci/gpu_tests.py --sanitizer)
    covers them; the result still equals the host emulation."""
    cls, kw = CONFIGS[config]
    dtype, pkw = PRECISIONS[precision]
    sizes = [(300,), (7,), (16400,)]
    ps_c = params_on("cpu", sizes, dtype=dtype)
    ps_g = params_on("cuda", sizes, dtype=dtype, unaligned=True)
    oc, og = cls(ps_c, **kw, **pkw), cls(ps_g, **kw, **pkw)
    for s in range(2):
        set_grads(ps_c, s)
        set_grads(ps_g, s)
        oc.step()
        og.step()
    torch.cuda.synchronize()
    compare(oc, ps_c, og, ps_g, f"sanitizer subset {config}/{precision}")

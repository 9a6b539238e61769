"""The multi-tensor optimizer base: state creation, table caching, GradScaler hooks,
fused global-norm clipping, state_dict compatibility with torch.optim. Subclasses say which
algorithm and which state tensors they keep."""

from __future__ import annotations

import abc

import torch

from . import _tables
from ._native import C
from ._tables import DTYPE_CODE, Table, local, ptr

ALGO_ADAM, ALGO_SGD, ALGO_LION = 0, 1, 2

_QMAPS: dict = {}


def dynamic_map(signed: bool, device) -> torch.Tensor:
    """bitsandbytes' dynamic 8-bit map (256 ascending values), cached per device."""
    key = (signed, str(device))
    if key not in _QMAPS:
        _QMAPS[key] = torch.tensor(C.dynamic_map(signed), dtype=torch.float32).to(device)
    return _QMAPS[key]


def _fail(arg: str, msg: str):
    raise ValueError(f"{arg}: {msg}")


def check_lr(lr):
    if isinstance(lr, torch.Tensor):
        if lr.numel() != 1 or lr.dtype != torch.float32:
            _fail("lr", f"a tensor lr must be one float32 value, got {lr.dtype} of {lr.numel()} elements")
        if lr.device.type == "cpu" and not lr.item() >= 0.0:
            _fail("lr", f"expected >= 0, got {lr.item()}")
        return
    if not (isinstance(lr, (int, float)) and lr >= 0.0):
        _fail("lr", f"expected a number >= 0, got {lr!r}")


def check_betas(betas, names=("beta1", "beta2")):
    if not (isinstance(betas, (tuple, list)) and len(betas) == 2):
        _fail("betas", f"expected a pair (beta1, beta2), got {betas!r}")
    for b, n in zip(betas, names):
        if not (isinstance(b, (int, float)) and 0.0 <= b < 1.0):
            _fail("betas", f"{n} must be in [0, 1), got {b!r}")


def check_nonneg(name, v):
    if not (isinstance(v, (int, float)) and v >= 0.0):
        _fail(name, f"expected a number >= 0, got {v!r}")


class MultiTensorOptimizer(torch.optim.Optimizer, abc.ABC):
    """One launch a (param group, dtype): every parameter with a gradient is updated by one
    multi-tensor kernel (CUDA) or by the host emulation (CPU), which give the same bits."""

    _algo = ALGO_ADAM
    # torch.amp.GradScaler passes grad_scale / found_inf instead of unscaling (as for fused=True)
    _step_supports_amp_scaling = True

    def __init__(self, params, defaults: dict, *, max_grad_norm: float | None = None, seed: int = 0,
                 variant: str | None = None):
        if max_grad_norm is not None and not (isinstance(max_grad_norm, (int, float)) and max_grad_norm > 0):
            _fail("max_grad_norm", f"expected None or a number > 0, got {max_grad_norm!r}")
        if not (isinstance(seed, int) and 0 <= seed < 2**32):
            _fail("seed", f"expected an integer in [0, 2**32), got {seed!r}")
        if variant is not None and variant not in C.VARIANTS:
            _fail("variant", f"expected None or one of {C.VARIANTS}, got {variant!r}")
        # kernel variant (the same bits, different occupancy); None: the library's planner
        self.variant = -1 if variant is None else C.VARIANTS.index(variant)
        self.max_grad_norm = max_grad_norm
        self.seed = seed
        self.last_grad_norm: torch.Tensor | None = None
        self._cache: dict = {}
        self._clip_buffers: dict = {}
        super().__init__(params, defaults)

    # ---- hyperparameters -----------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        self._check_group(self.param_groups[-1])
        self._cache = {}

    def _check_group(self, group: dict) -> None:  # subclasses: named errors
        check_lr(group["lr"])

    # ---- state -----------------------------------------------------------------------------
    @abc.abstractmethod
    def _state_spec(self, group: dict) -> dict:
        """Which states a parameter of this group keeps: {'s1': key or None, 's2': ..., 's3': ...}."""

    def _q8(self, group: dict) -> bool:
        return bool(group.get("state_8bit", False))

    def _init_state(self, p: torch.Tensor, group: dict) -> None:
        state = self.state[p]
        lp = local(p)
        spec = self._state_spec(group)
        if "step" not in state:
            state["step"] = torch.zeros((), dtype=torch.float32, device=lp.device)
        q8 = self._q8(group)
        for slot in ("s1", "s2", "s3"):
            key = spec.get(slot)
            if key is None or key in state:
                continue
            if q8 and slot in ("s1", "s2"):
                state[key] = torch.zeros_like(p, dtype=torch.uint8, memory_format=torch.contiguous_format)
                # code of 0.0: the map's zero entry; absmax 0 decodes every code to 0 anyway
                blocks = (lp.numel() + C.QBLOCK - 1) // C.QBLOCK
                state[key + "_absmax"] = torch.zeros(blocks, dtype=torch.float32, device=lp.device)
            else:
                state[key] = torch.zeros_like(p, dtype=torch.float32, memory_format=torch.contiguous_format)
        if p.dtype != torch.float32 and group.get("master_weights", False) and "master" not in state:
            state["master"] = p.detach().to(torch.float32, memory_format=torch.contiguous_format).clone()

    def _normalize_state(self) -> None:
        """After load_state_dict: steps as float32 on the parameter's device, float states in
        float32 (torch casts them to the parameter's dtype), group keys this class needs."""
        for group in self.param_groups:
            for k, v in self.defaults.items():
                group.setdefault(k, v)
            spec = self._state_spec(group)
            for p in group["params"]:
                state = self.state.get(p)
                if not state:
                    continue
                dev = local(p).device
                step = state.get("step")
                if step is None:
                    step = 1.0 if any(spec.get(s) in state for s in ("s1", "s2")) else 0.0
                state["step"] = torch.tensor(float(step), dtype=torch.float32, device=dev)
                for slot in ("s1", "s2", "s3"):
                    key = spec.get(slot)
                    if key in state and state[key] is not None and state[key].dtype != torch.uint8:
                        state[key] = state[key].to(dtype=torch.float32, memory_format=torch.contiguous_format).clone()
                if "master" in state:
                    state["master"] = state["master"].to(dtype=torch.float32).contiguous()
        self._cache = {}

    def load_state_dict(self, state_dict: dict) -> None:
        # torch's load casts every non-step state tensor to the parameter's dtype: 8-bit codes would
        # become floats and fp32 master weights / moments of bf16 params would lose their low bits.
        # The saved tensors are put back as they were (copied to the parameter's device).
        super().load_state_dict(state_dict)
        by_id = {}
        for saved, group in zip(state_dict["param_groups"], self.param_groups):
            by_id.update(zip(saved["params"], group["params"]))
        for pid, st in state_dict["state"].items():
            p = by_id.get(pid)
            if p is None:
                continue
            for k, v in st.items():
                if k != "step" and isinstance(v, torch.Tensor):
                    self.state[p][k] = v.to(device=local(p).device, copy=True)
        self._normalize_state()

    # ---- tables ----------------------------------------------------------------------------
    def _validate(self, params, grads) -> None:
        dev0 = None
        for group in self.param_groups:
            for p in group["params"]:
                dev0 = local(p).device
                break
            if dev0 is not None:
                break
        for i, (p, g) in enumerate(zip(params, grads)):
            lp, lg = local(p), local(g)
            if g.is_sparse or lg.layout != torch.strided:
                _fail("grad", f"parameter {i}: sparse gradients are not supported")
            if p.dtype not in DTYPE_CODE:
                _fail("params", f"parameter {i}: expected bfloat16, float16 or float32, got {p.dtype}")
            if g.dtype != p.dtype:
                _fail("grad", f"parameter {i}: expected the parameter's dtype {p.dtype}, got {g.dtype}")
            if lp.device != dev0:
                _fail("params", f"all parameters must be on one device: parameter {i} is on {lp.device}, "
                                f"the first on {dev0}")
            if lg.device != lp.device:
                _fail("grad", f"parameter {i}: expected the parameter's device {lp.device}, got {lg.device}")
            if tuple(lg.shape) != tuple(lp.shape):
                _fail("grad", f"parameter {i}: expected shape {tuple(lp.shape)}, got {tuple(lg.shape)}")
            if not lp.is_contiguous() or not lg.is_contiguous():
                _fail("params", f"parameter {i}: parameters and gradients must be contiguous")

    def _group_tables(self, gi: int, group: dict, first_id: int):
        """The tables of a group, rebuilt only when the set of gradients or their addresses changed."""
        params = group["params"]
        cached = self._cache.get(gi)
        try:
            # the per-step cost of a cached table: one data_ptr() a gradient (DTensor groups: of the local shard)
            # the parameters' addresses too: `p.data = ...` (module.to(), .half()) moves a parameter, and the
            # table must never point at freed memory
            # and the options that decide which states a row points at (changed mid-run: new states, new table)
            opts = (group.get("amsgrad"), group.get("state_8bit"), group.get("master_weights"), group.get("momentum"))
            if cached is not None and not cached[2]:
                key = ([p.data_ptr() for p in params], [g.data_ptr() if (g := p.grad) is not None else 0 for p in params],
                       opts)
            else:
                key = (*self._key_slow(params), opts)
        except RuntimeError:  # a gradient without storage (sparse): _validate names it
            key = None
        if cached is not None and cached[0] == key:
            return cached[1]
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            raise RuntimeError("mlops.optimizers: the gradients moved or appeared during CUDA graph capture; "
                               "run one step before capturing (the tables are built outside the graph)")
        with_grad = [(i, p) for i, p in enumerate(params) if p.grad is not None]
        self._validate([p for _, p in with_grad], [p.grad for _, p in with_grad])
        spec = self._state_spec(group)
        buckets: dict = {}
        for i, p in with_grad:
            self._init_state(p, group)
            st = self.state[p]
            rows = buckets.setdefault(p.dtype, _tables.new_rows())
            rows["param"].append(ptr(p))
            rows["grad"].append(ptr(p.grad))
            for slot in ("s1", "s2", "s3"):
                k = spec.get(slot)
                rows[slot].append(ptr(st[k]) if k is not None else 0)
            rows["master"].append(ptr(st.get("master")))
            q8 = self._q8(group)
            rows["am1"].append(ptr(st[spec["s1"] + "_absmax"]) if q8 else 0)
            rows["am2"].append(ptr(st[spec["s2"] + "_absmax"]) if q8 else 0)
            rows["step"].append(ptr(st["step"]))
            rows["numel"].append(local(p).numel())
            rows["id"].append((first_id + i) & 0xFFFFFFFF)
        dev = local(with_grad[0][1]).device if with_grad else None
        tables = [Table(dev, dt, rows) for dt, rows in buckets.items()]
        has_dtensor = any(getattr(p, "_local_tensor", None) is not None for _, p in with_grad)
        if has_dtensor:
            key = (*self._key_slow(params), opts)
        self._cache[gi] = (key, tables, has_dtensor, _shard_groups([p for _, p in with_grad]))
        return tables

    @staticmethod
    def _key_slow(params):
        """The cache key through the local shards (DTensor) of parameters and gradients."""
        return ([ptr(p) for p in params], [ptr(g) if (g := p.grad) is not None else 0 for p in params])

    # ---- step ------------------------------------------------------------------------------
    @abc.abstractmethod
    def _launch_args(self, group: dict) -> dict:
        """Algorithm scalars for C.step: beta1, beta2, eps, weight_decay, decoupled, amsgrad, nesterov."""

    @torch.no_grad()
    def step(self, closure=None, *, grad_scale: torch.Tensor | None = None,
             found_inf: torch.Tensor | None = None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if grad_scale is None:
            grad_scale = getattr(self, "grad_scale", None)
        if found_inf is None:
            found_inf = getattr(self, "found_inf", None)
        if torch.compiler.is_compiling():
            self._step_traced(grad_scale, found_inf)
            return loss
        all_tables = []
        first_id = 0
        for gi, group in enumerate(self.param_groups):
            tables = self._group_tables(gi, group, first_id)
            first_id += len(group["params"])
            all_tables.append((group, tables))
        clip = None
        if self.max_grad_norm is not None:
            flat = [t for _, ts in all_tables for t in ts]
            if flat:
                groups = {}
                for gi in range(len(self.param_groups)):
                    for pg in self._cache[gi][3]:
                        groups[id(pg)] = pg
                norm, clip = _grad_norm(flat, float(self.max_grad_norm), _on(grad_scale, flat[0].device),
                                        self._clip_buffers, list(groups.values()))
                self.last_grad_norm = norm
        for group, tables in all_tables:
            for t in tables:
                self._run(group, t, _on(grad_scale, t.device), _on(found_inf, t.device), clip)
        return loss

    def _step_traced(self, grad_scale, found_inf) -> None:
        """The step as torch.compile traces it: tensor lists into mlops_optimizers ops (_ops.py).
        The states must exist: run one eager step before compiling."""
        work = []
        first_id = 0
        for group in self.param_groups:
            ps, ids = [], []
            for i, p in enumerate(group["params"]):
                if p.grad is not None:
                    ps.append(p)
                    ids.append(first_id + i)
            first_id += len(group["params"])
            work.append((group, ps, ids))
        clip = None
        grads = [p.grad for _, ps, _ in work for p in ps]
        if self.max_grad_norm is not None and grads:
            nc = torch.ops.mlops_optimizers.grad_norm(grads, float(self.max_grad_norm), grad_scale)
            self.last_grad_norm = nc[0]
            clip = nc[1]
        for group, ps, ids in work:
            spec = self._state_spec(group)
            states = [self.state[p] for p in ps]
            q8 = self._q8(group)

            def slot(key, sts=states):
                return [st[key] for st in sts] if key is not None else []

            masters, master_of = [], []  # the masters that exist, and for each parameter its index or -1
            for st in states:
                if "master" in st:
                    master_of.append(len(masters))
                    masters.append(st["master"])
                else:
                    master_of.append(-1)
            a = self._launch_args(group)
            lr = group["lr"]
            lr_t = lr if isinstance(lr, torch.Tensor) else None
            torch.ops.mlops_optimizers.multi_tensor_step_(
                ps, [p.grad for p in ps], slot(spec.get("s1")), slot(spec.get("s2")), slot(spec.get("s3")),
                masters, master_of,
                slot(spec["s1"] + "_absmax") if q8 else [],
                slot(spec["s2"] + "_absmax") if q8 else [], [st["step"] for st in states], ids, grad_scale,
                found_inf, clip, lr_t, self._algo, bool(a.get("decoupled", False)), bool(a.get("amsgrad", False)),
                bool(group.get("maximize", False)), bool(a.get("nesterov", False)), q8,
                bool(group.get("stochastic_rounding", False)), self.seed, 0.0 if lr_t is not None else float(lr),
                float(a["beta1"]), float(a["beta2"]), float(a.get("eps", 0.0)), float(group["weight_decay"]),
                self.variant)

    def _run(self, group, t: Table, grad_scale, found_inf, clip) -> None:
        a = self._launch_args(group)
        lr = group["lr"]
        lr_dev = 0
        if isinstance(lr, torch.Tensor):
            if lr.device == t.device:
                lr_dev, lr = lr.data_ptr(), 0.0
            else:
                lr = float(lr)
        q8 = self._q8(group)
        qmap1 = dynamic_map(True, t.device).data_ptr() if q8 else 0
        qmap2 = dynamic_map(False, t.device).data_ptr() if q8 else 0
        sr = bool(group.get("stochastic_rounding", False)) and t.dtype == torch.bfloat16
        on_cuda = t.device.type == "cuda"
        stream = torch.cuda.current_stream(t.device).cuda_stream if on_cuda else 0
        args = (on_cuda, stream, self._algo, DTYPE_CODE[t.dtype], a.get("decoupled", False), a.get("amsgrad", False),
                bool(group.get("maximize", False)), a.get("nesterov", False), q8, sr, self.seed, float(lr), lr_dev,
                float(a["beta1"]), float(a["beta2"]), float(a.get("eps", 0.0)), float(group["weight_decay"]),
                ptr(grad_scale), ptr(found_inf), ptr(clip), qmap1, qmap2, t.table.data_ptr(), t.num_tensors,
                t.num_chunks, self.variant)
        if on_cuda and t.device.index != torch.cuda.current_device():
            with torch.cuda.device(t.device):
                C.step(*args)
        else:
            C.step(*args)


def _on(t: torch.Tensor | None, device) -> torch.Tensor | None:
    if t is None:
        return None
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(float(t))
    if t.device != device or t.dtype != torch.float32:
        t = t.to(device=device, dtype=torch.float32, non_blocking=True)
    return t


def _shard_groups(params) -> list:
    """The process groups over which DTensor parameters are sharded (FSDP2: the mesh dims with a
    Shard placement): the global norm sums the local sums of squares over them."""
    out = {}
    for p in params:
        mesh, placements = getattr(p, "device_mesh", None), getattr(p, "placements", None)
        if mesh is None or placements is None:
            continue
        for dim, pl in enumerate(placements):
            if pl.is_shard():
                pg = mesh.get_group(dim)
                out[id(pg)] = pg
    return list(out.values())


def _grad_norm(tables, max_norm: float, grad_scale, buffers: dict, reduce_groups=()):
    """Global L2 norm of every table's grads (one pass, fixed order) and the clip coefficient.
    With sharded (DTensor) parameters the local squared norms are all-reduced over reduce_groups
    (the bits then depend on the sharding; unsharded, they depend on the data alone)."""
    dev = tables[0].device
    total = sum(t.num_chunks for t in tables)
    key = (str(dev), total)
    if key not in buffers:
        buffers.clear()
        buffers[key] = (torch.empty(max(total, 1), dtype=torch.float32, device=dev),
                        torch.empty(2, dtype=torch.float32, device=dev))
    partials, out = buffers[key]
    on_cuda = dev.type == "cuda"
    stream = torch.cuda.current_stream(dev).cuda_stream if on_cuda else 0
    off = 0
    for t in tables:
        if t.device != dev:
            _fail("params", "the global gradient norm needs every parameter on one device")
        C.norm_partials(on_cuda, stream, t.table.data_ptr(), t.num_tensors, t.num_chunks, partials.data_ptr(), off)
        off += t.num_chunks
    C.norm_finalize(on_cuda, stream, partials.data_ptr(), total, max_norm, ptr(grad_scale), out.data_ptr(),
                    out.data_ptr() + 4)
    if reduce_groups:
        import torch.distributed as dist

        sq = out[0:1] * out[0:1]
        for pg in reduce_groups:
            dist.all_reduce(sq, group=pg)
        torch.sqrt(sq, out=out[0:1])
        # torch.nn.utils.clip_grad_norm_'s coefficient, as the finalize kernel computes it
        torch.clamp(max_norm / (out[0:1] + 1e-6), max=1.0, out=out[1:2])
    return out[0], out[1]

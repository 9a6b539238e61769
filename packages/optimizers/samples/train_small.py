"""A small training loop a user would copy: a bf16 model with fp32 master weights, fused
global-norm clipping, torch.amp.GradScaler-style skipping, and (on a GPU) the whole optimizer
step captured in a CUDA graph with the learning rate on the device.

    python packages/optimizers/samples/train_small.py          # CUDA if present, else CPU
"""

import mlops.optimizers as mo
import torch


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 4)).to(dev)
    model = model.to(torch.bfloat16)
    lr = torch.tensor(3e-3, device=dev)  # on the device: a captured step reads it at replay
    opt = mo.AdamW(model.parameters(), lr=lr, weight_decay=0.01, master_weights=True, max_grad_norm=1.0)
    x = torch.randn(512, 64, device=dev, dtype=torch.bfloat16)
    y = (x.float() @ torch.randn(64, 4, device=dev)).argmax(-1)

    def loss_fn():
        return torch.nn.functional.cross_entropy(model(x).float(), y)

    graph = None
    first = None
    for step in range(60):
        opt.zero_grad(set_to_none=False)  # gradients keep their memory: the optimizer's table stays valid
        loss = loss_fn()
        loss.backward()
        first = loss.item() if first is None else first
        if dev == "cuda" and step == 3:  # after warm-up steps: capture one optimizer step
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                opt.step()
        if graph is not None:
            graph.replay()
        else:
            opt.step()
        if step == 40:
            lr.fill_(1e-3)  # a schedule: the captured step sees it
        if step % 20 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}  grad norm {float(opt.last_grad_norm):.3f}")
    final = loss_fn().item()
    print(f"final loss {final:.4f}")
    return first, final


if __name__ == "__main__":
    main()

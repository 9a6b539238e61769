"""Session 55: the bench's sampling rows as raw fp32 files for the timeline probe's MLOPS_PROBE_ROWS.
python3 s55_rows.py DIR: bench_vocab.py's B = 1 and 8 rows (seed 1000 + B, torch.randn(B, V) * 3) as DIR/rows-b<B>.f32;
python3 s55_rows.py DIR SEED ...: the B = 1 row of each seed (bench_row_sweep's) as DIR/rows-s<SEED>.f32."""
import sys

import torch

V = 151936


def save(seed: int, rows: int, path: str):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    (torch.randn(rows, V, device="cuda", generator=gen) * 3).cpu().numpy().tofile(path)


out, seeds = sys.argv[1], [int(s) for s in sys.argv[2:]]
for s in seeds:
    save(s, 1, f"{out}/rows-s{s}.f32")
for B in () if seeds else (1, 8):
    save(1000 + B, B, f"{out}/rows-b{B}.f32")

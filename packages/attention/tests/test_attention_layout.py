"""CPU (CI): the cache format as documented (docs/attention.md) is the format compiled: the C
struct's offsets and sizes (offsetof / sizeof from the built library) match the doc's table and a
ctypes mirror; the record parts' offsets and sizes match the doc's formulas for both modes and head
dims; the tensors of a Python cache have the documented shapes, dtypes and alignment."""

import ctypes
import pathlib
import re

import pytest

import mlops.attention as A

DOC = pathlib.Path(__file__).resolve().parents[3] / "docs" / "attention.md"


def table(section: str):
    text = DOC.read_text()
    start = text.index(section)
    end = text.find("\n### ", start + 1)
    rows = []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 3 and not set(cells[0]) <= set("-") and cells[0] not in ("field", "part"):
            rows.append(cells)
    return rows


class CacheMirror(ctypes.Structure):  # mlops/fbla.h, field for field
    _fields_ = [("batch", ctypes.c_int32), ("kv_heads", ctypes.c_int32), ("capacity", ctypes.c_int32),
                ("head_dim", ctypes.c_int32), ("mode", ctypes.c_int), ("slots", ctypes.c_int32),
                ("record_bytes", ctypes.c_int64), ("records", ctypes.c_void_p), ("sink_k", ctypes.c_void_p),
                ("sink_v", ctypes.c_void_p), ("tail_k", ctypes.c_void_p), ("tail_v", ctypes.c_void_p),
                ("lengths", ctypes.c_void_p), ("flags", ctypes.c_void_p)]


def test_struct_matches_doc_and_mirror():
    compiled = A.struct_layout()
    rows = table("### The C struct")
    assert [r[0] for r in rows] == [f for f, _ in CacheMirror._fields_]
    for name, off, size, *_ in rows:
        assert compiled[f"mlops_fbla_cache.{name}"] == (int(off), int(size)), name
        assert getattr(CacheMirror, name).offset == int(off), name
        assert getattr(CacheMirror, name).size == int(size), name
    assert compiled["sizeof(mlops_fbla_cache)"] == ctypes.sizeof(CacheMirror) == 88
    assert compiled["MLOPS_FBLA_GROUP"] == A.GROUP == 128
    assert compiled["MLOPS_FBLA_BLOCK"] == A.BLOCK == 16
    assert compiled["MLOPS_FBLA_RECORD_VERSION"] == 4  # K fields and V codes fragment-ordered, bf16 scale arrays


@pytest.mark.parametrize("mode", ["3+3", "4+2"])
@pytest.mark.parametrize("D", [64, 128])
def test_record_matches_doc(mode, D):
    lay = A.record_layout(D, mode)
    cb, fb = (3, 3) if mode == "3+3" else (4, 2)
    assert (lay["coarse_bits"], lay["fine_bits"]) == (cb, fb)
    env = {"D": D, "cb": cb, "fb": fb}
    end = 0
    for part, off, size, *_ in table("### A closed group's record"):
        ev = lambda s: eval(re.sub(r"\b(k_coarse)\b", str(lay["k_coarse"]), s.replace("·", "*")), {}, env)  # noqa: E731
        assert lay[part] == ev(off), (part, off)
        assert lay[part] % 16 == 0, part
        end = max(end, ev(off) + ev(size))
    assert lay["bytes"] == end == 196 * D + 512
    assert lay["bytes"] % 256 == 0
    assert lay["bytes"] == {64: 13056, 128: 25600}[D]


def test_cache_tensors():
    c = A.empty(3, 2, 1000, 64, "4+2", device="cpu")
    assert c.slots == 1000 // 128 - 1
    assert tuple(c.records.shape) == (3, 2, c.slots, 13056) and c.records.data_ptr() % 256 == 0
    for t in (c.sink_k, c.sink_v, c.tail_k, c.tail_v):
        assert tuple(t.shape) == (3, 2, 128, 64) and str(t.dtype) == "torch.bfloat16"
    assert str(c.lengths.dtype) == "torch.int32" and c.lengths.tolist() == [0, 0, 0]
    assert A.empty(1, 1, 255, 64, device="cpu").slots == 0  # a group past capacity never closes
    assert A.empty(1, 1, 256, 64, device="cpu").slots == 1
    assert c.scratch(4).data_ptr() % 256 == 0 and c.scratch(4).numel() == A.scratch_bytes(c, 4)

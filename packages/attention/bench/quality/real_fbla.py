"""FBLA through the real mlops.attention kernels (GPU). Placeholder until the package's Python API lands."""

from __future__ import annotations


def available(device):
    """None when mlops.attention cannot be used on `device`, else a dict of what the harness needs from it."""
    try:
        import mlops.attention  # noqa: F401
    except ImportError:
        return None
    if getattr(device, "type", str(device)) != "cuda":
        return None
    return None

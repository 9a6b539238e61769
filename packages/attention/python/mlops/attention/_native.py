"""Loads the native module. Import errors are re-raised with what to do about them."""

try:
    from . import _C  # noqa: F401
except ImportError as e:  # pragma: no cover - a broken install
    raise ImportError(
        "mlops.attention: the native module _C did not load (" + str(e) + "). "
        "Reinstall mlops-attention for this Python and CUDA (see the README)."
    ) from e

C = _C

#!/usr/bin/env python3
"""Give a built wheel a PEP 440 local version (+cu130): the file name AND its metadata.

    python tools/wheel_local_version.py dist/mlops_norm-0.1.0-cp311-cp311-linux_x86_64.whl cu130
        -> dist/mlops_norm-0.1.0+cu130-cp311-cp311-linux_x86_64.whl (the input is removed)

    from wheel_local_version import set_local_version; set_local_version(path, "cu130") -> new path

`nox -s build` runs it on each CUDA package's wheel: the name carries the toolkit the module was
built with. Not the torch release: the modules are nanobind modules that include no torch C++
header and link no torch library (docs/distribution.md), so one wheel serves every torch >= 2.4.

What changes: directory entries of the zip are dropped (see set_local_version), the .dist-info
directory (<name>-<version>+<local>.dist-info), `Version:` in METADATA,
and RECORD (paths renamed, hashes and sizes of METADATA / every file recomputed). The packages'
pyproject.toml keep the plain version, so sdists and CMake (mlops_package_version) are unchanged.
A pin `mlops-norm~=0.1.0` (the meta package) matches 0.1.0+cu130: PEP 440 ignores a candidate's
local label for specifiers without one.
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import pathlib
import re
import sys
import zipfile

LOCAL_RE = re.compile(r"^[a-z0-9]+(?:\.[a-z0-9]+)*$")


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def set_local_version(whl: pathlib.Path | str, local: str, keep: bool = False) -> pathlib.Path:
    whl = pathlib.Path(whl)
    if not LOCAL_RE.match(local):
        raise ValueError(f"not a PEP 440 local label: {local!r}")
    name, version, rest = whl.name.split("-", 2)
    if "+" in version:
        raise ValueError(f"{whl.name} has a local version already")
    new_version = f"{version}+{local}"
    old_di, new_di = f"{name}-{version}.dist-info/", f"{name}-{new_version}.dist-info/"
    old_data, new_data = f"{name}-{version}.data/", f"{name}-{new_version}.data/"
    out = whl.with_name(f"{name}-{new_version}-{rest}")
    with zipfile.ZipFile(whl) as zin:
        infos = zin.infolist()
        if not any(i.filename.startswith(old_di) for i in infos):
            raise ValueError(f"{whl.name}: no {old_di}")
        entries = []
        for info in infos:
            # Directory entries ("mlops/", which auditwheel repair writes) are dropped: a wheel's
            # directories are implied, and RECORD lists files only (auditwheel show opens every
            # RECORD row and fails on a directory: IsADirectoryError, auditwheel 6.8.2).
            if info.is_dir():
                continue
            data = zin.read(info.filename)
            fn = info.filename
            for old, new in ((old_di, new_di), (old_data, new_data)):
                if fn.startswith(old):
                    fn = new + fn[len(old):]
            if fn == new_di + "METADATA":
                text = data.decode()
                text, n = re.subn(r"(?m)^Version: .*$", f"Version: {new_version}", text, count=1)
                assert n == 1, "METADATA without a Version line"
                data = text.encode()
            entries.append((info, fn, data))
    record = []
    for _, fn, data in entries:
        if fn == new_di + "RECORD":
            continue
        record.append(f"{fn},{_record_hash(data)},{len(data)}")
    record.append(f"{new_di}RECORD,,")
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zout:
        for info, fn, data in entries:
            if fn == new_di + "RECORD":
                continue
            zi = zipfile.ZipInfo(fn, date_time=info.date_time)
            zi.external_attr = info.external_attr
            zi.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(zi, data)
        zi = zipfile.ZipInfo(new_di + "RECORD", date_time=entries[0][0].date_time)
        zi.external_attr = 0o644 << 16
        zi.compress_type = zipfile.ZIP_DEFLATED
        zout.writestr(zi, "\n".join(record) + "\n")
    tmp.replace(out)
    if not keep and out != whl:
        whl.unlink()
    return out


def cuda_local(cuda: str) -> str:
    """'13.0' / '13.0.2' / '12.4' -> 'cu130' / 'cu130' / 'cu124' (major.minor, as torch's +cu126)."""
    major, minor = cuda.split(".")[:2]
    return f"cu{major}{minor}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("wheel", type=pathlib.Path)
    ap.add_argument("local", help="e.g. cu130")
    ap.add_argument("--keep", action="store_true", help="keep the input wheel")
    a = ap.parse_args(argv)
    print(set_local_version(a.wheel, a.local, keep=a.keep))


if __name__ == "__main__":
    sys.exit(main())

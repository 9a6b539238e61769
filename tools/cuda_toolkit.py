#!/usr/bin/env python3
"""Provide a CUDA toolkit (an nvcc that builds) on a machine that has only Python.

    python tools/cuda_toolkit.py 12.4           # prints .../cuda-12.4/bin/nvcc      (notes §2.2)
    python tools/cuda_toolkit.py 11.8           # prints .../cuda-11.8/bin/nvcc      (12.4's way + gcc 11)
    python tools/cuda_toolkit.py 13.0           # prints .../nvidia/cu13/bin/nvcc    (notes §2.1)
    python tools/cuda_toolkit.py 13.0.2         # an explicit full 13.x version
    python tools/cuda_toolkit.py 12.4 --print-root   # the toolkit root instead of nvcc
    python tools/cuda_toolkit.py system         # the nvcc on PATH, if any (exit 1 if none)

    from cuda_toolkit import provide; nvcc = provide("12.4")   # -> pathlib.Path

Only stdout carries the answer (one path); logs go to stderr. Toolkits are cached under
$MLOPS_TOOLKIT_CACHE (default ~/.cache/mlops/toolkits) as cuda-<version>/; a finished tree holds
the marker file .mlops-toolkit-ok and a second call returns at once. A flock serialises concurrent
callers. Needs: network to PyPI (pip) and, for 12.4 / 11.8, to the Debian archive (apt-get if
present, else a direct pool download; each .deb is checked against a pinned sha256 either way).

Why two recipes: no single toolkit covers sm_50 … sm_90 (notes §1.2). 13.x comes whole from PyPI but
starts at sm_75; PyPI's cu12 wheels carry no nvcc at all (only ptxas), so 12.4 takes its binaries
from Debian's nvidia-cuda-toolkit .deb and headers/libraries from the cu12 wheels. 11.8 is assembled
the same way from bookworm's .deb and the cu11 wheels, plus cudart_static / cudadevrt from Debian's
nvidia-cuda-dev and Debian's gcc 11 as nvcc's host compiler (11.8's host_config.h refuses gcc > 11).

Measured on the 2-core dev machine (Debian 12, shared load, fast mirror), empty cache dir and
empty pip cache (PIP_CACHE_DIR=<new dir>), from scratch:
    12.4:   12-13 s wall (apt update + .deb 87 MB: 1 s, 4 wheels: 3-4 s, assemble: 8 s), tree 224 MB
    11.8:   see PINS["11.8"] (9 .debs, 919 MB of them the nvidia-cuda-dev .deb read for two files)
    13.0.2: 8 s wall (venv + pip install), 296 MB
    a second call: 0.2 s wall for the whole CLI (marker check, no network)
On a slow network the downloads dominate: 87 MB .deb + 29 MB of cu12 wheels for 12.4; 13.0 pulls
about 300 MB of wheels.
"""
from __future__ import annotations

import argparse
import contextlib
import glob
import hashlib
import io
import json
import os
import pathlib
import pwd
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile

# ---------------------------------------------------------------------------------------------
# PINS: every version this tool installs. Change versions here only.
#   "12.4": Debian trixie non-free nvidia-cuda-toolkit (nvcc, cicc, cudafe++, fatbinary, nvlink, …)
#           + PyPI cu12 wheels: nvcc-cu12 (ptxas, libnvvm, libdevice, crt headers), runtime-cu12
#           (cuda_runtime headers, libcudart.so.12), cccl-cu12 (thrust/cub/libcu++; 12.4.127 itself
#           is yanked, hence .post1) + runtime-cu12 12.9.79 for libcudart_static.a only (the 12.4
#           wheel has none; notes §1.1).
#   "11.8": the same from Debian bookworm (11.8 .deb, cu11 wheels) + nvidia-cuda-dev (static cudart)
#           + gcc 11 from bookworm main as nvcc's host compiler; details at the entry.
#   "13.x": the cuda-toolkit metapackage with extras; installing nvidia-cuda-nvcc alone pulls
#           an unpinned, newer nvvm/crt and ptxas fails "Unsupported .version" (notes §2.1).
# ---------------------------------------------------------------------------------------------
PINS = {
    "12.4": {
        "deb": {
            "suite": "trixie",  # "bookworm non-free" has 11.8, "experimental" 12.5
            "component": "non-free",
            "package": "nvidia-cuda-toolkit",
            "version": "12.4.131~12.4.1-2",
            "sha256": "cd5fe85aee38d108b315f408a688641478f2402622a10c677478eb7a6c4e5319",
        },
        "wheels": [
            "nvidia-cuda-nvcc-cu12==12.4.131",
            "nvidia-cuda-runtime-cu12==12.4.127",
            "nvidia-cuda-cccl-cu12==12.4.127.post1",
        ],
        "static_cudart_wheel": "nvidia-cuda-runtime-cu12==12.9.79",
    },
    "11.8": {
        # Debian bookworm non-free: nvcc, cicc, cudafe++, fatbinary, nvlink, ptxas, libdevice, …
        "deb": {
            "suite": "bookworm",
            "component": "non-free",
            "package": "nvidia-cuda-toolkit",
            "version": "11.8.89~11.8.0-5~deb12u1",
            "sha256": "d1156026e704fe0368b6295db06224ed00a727966fb13454f34e3f3102db0457",
        },
        # No cu11 wheel has libcudart_static.a / libcudadevrt.a; Debian's nvidia-cuda-dev (774 MB,
        # 2.8 GB unpacked: every CUDA library) does. Only these two files are read from it, streamed.
        "dev_deb": {
            "suite": "bookworm",
            "component": "non-free",
            "package": "nvidia-cuda-dev",
            "source": "nvidia-cuda-toolkit",
            "version": "11.8.89~11.8.0-5~deb12u1",
            "sha256": "dc63bf2fb94aaaf903e9bad0c35f631266077d016b34329ec7af456bd7fed5ec",
            "files": {"usr/lib/x86_64-linux-gnu/libcudart_static.a": "lib64/libcudart_static.a",
                      "usr/lib/x86_64-linux-gnu/libcudadevrt.a": "lib64/libcudadevrt.a"},
        },
        # 11.8's crt/host_config.h stops at gcc 11 ("gcc versions later than 11 are not supported");
        # Debian's nvidia-cuda-toolkit depends on g++-11 for that reason. bookworm main has 11.3.0:
        # unpacked into <root>/host-gcc and put first on nvcc's PATH by bin/nvcc, a script (NVCC_WRAPPER_118).
        "host_gcc": {
            "suite": "bookworm",
            "component": "main",
            "source": "gcc-11",
            "version": "11.3.0-12",
            "sha256": {
                "cpp-11": "2fffa4164a7d4103c410fce5b76fae2cb9508e6f0095c99a6f91f686566a22a1",
                "gcc-11": "ffd171e4df5bbc0ace8ecc6efcb6192a8f64fa5bb22ef2f193be66a43431c356",
                "g++-11": "4ccab3ebfb3edd0c32a5f7abe98fcb1865e52c369418fe468c1f793e5ccda1f5",
                "libgcc-11-dev": "ca9f6d0e48c482e32b5198b4dd6bd406b4eeb79b8557acc7ce4e89697cd6afa0",
                "libstdc++-11-dev": "9db1a0a4f4db845191380e25ce7d8669ee4785e24e9550c2fcd79d010ea2d513",
            },
        },
        # nvcc-cu11: crt/ headers, libnvvm (its ptxas and libdevice equal the .deb's); runtime-cu11:
        # cuda_runtime*.h, libcudart.so.11.0; cccl-cu11: thrust / cub / libcu++ (only .post1 exists)
        "wheels": [
            "nvidia-cuda-nvcc-cu11==11.8.89",
            "nvidia-cuda-runtime-cu11==11.8.89",
            "nvidia-cuda-cccl-cu11==11.8.89.post1",
        ],
    },
    # 13.<minor> -> full cuda-toolkit version; an unlisted 13.<minor> installs "==13.<minor>.*".
    "13": {"13.0": "13.0.2", "13.5": "13.5.0"},
    "13_requirement": "cuda-toolkit[nvcc,crt,nvvm,cudart,cccl]=={version}",
}

MARKER = ".mlops-toolkit-ok"


def log(msg: str) -> None:
    print(f"[cuda_toolkit] {msg}", file=sys.stderr, flush=True)


def cache_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("MLOPS_TOOLKIT_CACHE") or "~/.cache/mlops/toolkits").expanduser()


def run(cmd: list, **kw) -> None:
    """Run a command with its output on stderr (stdout is reserved for the answer)."""
    log("$ " + " ".join(map(str, cmd)))
    subprocess.run([str(c) for c in cmd], check=True, stdout=sys.stderr, **kw)


def nvcc_release(nvcc: pathlib.Path) -> str:
    out = subprocess.run([str(nvcc), "--version"], check=True, capture_output=True, text=True).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    if not m:
        raise RuntimeError(f"{nvcc} --version: no release in {out!r}")
    return m.group(1)


@contextlib.contextmanager
def locked(path: pathlib.Path):
    import fcntl  # Linux-only tool (the toolkits are x86_64 Linux)

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def _finished(root: pathlib.Path, nvcc: pathlib.Path) -> bool:
    return (root / MARKER).is_file() and nvcc.is_file()


# ---------------------------------------------------------------------------------------------
# CUDA 12.4 (notes §2.2)
# ---------------------------------------------------------------------------------------------
def _deb_uri() -> str:
    """The Debian mirror this machine already uses (deb822 or one-line format), else deb.debian.org."""
    src = pathlib.Path("/etc/apt/sources.list.d/debian.sources")
    if src.is_file():
        for line in src.read_text().splitlines():
            if line.startswith("URIs:"):
                return line.split()[1]
    one = pathlib.Path("/etc/apt/sources.list")
    if one.is_file():
        for line in one.read_text().splitlines():
            parts = [p for p in line.split() if not p.startswith("[")]  # drop [signed-by=...]
            if len(parts) > 2 and parts[0] == "deb" and "security" not in parts[1]:
                return parts[1]
    return "http://deb.debian.org/debian"


def _fetch_deb(work: pathlib.Path, pin: dict) -> pathlib.Path:
    """Download the pinned .deb with a private apt state: nothing under /etc/apt or /var/lib/apt
    changes and nothing is installed. Without apt-get, fetch the pool file directly. Several calls
    with one `work` share the apt lists of a suite (one `apt-get update` each)."""
    uri = _deb_uri()
    name = f"{pin['package']}_{pin['version']}_amd64.deb"
    deb = work / name
    if shutil.which("apt-get"):
        a = work / f"apt-{pin['suite']}-{pin['component']}"
        for d in ("lists/partial", "cache/archives/partial"):
            (a / d).mkdir(parents=True, exist_ok=True)
        (a / "sources.list").write_text(f"deb {uri} {pin['suite']} {pin['component']}\n")
        opts = ["-o", f"Dir::Etc::sourcelist={a}/sources.list", "-o", "Dir::Etc::sourceparts=-",
                "-o", f"Dir::State::Lists={a}/lists", "-o", f"Dir::Cache={a}/cache",
                # the private dirs are not readable by the _apt user: download as ourselves
                # (otherwise apt warns "Download is performed unsandboxed as root")
                "-o", "APT::Sandbox::User=" + pwd.getpwuid(os.getuid()).pw_name]
        if not (a / "updated").exists():
            run(["apt-get", "-q", *opts, "update"])
            (a / "updated").touch()
        dl = pathlib.Path(tempfile.mkdtemp(prefix="dl-", dir=work))
        run(["apt-get", "-q", *opts, "download", f"{pin['package']}={pin['version']}"], cwd=dl)
        # keep whatever name apt chose (it %-escapes some version characters, e.g. an epoch colon)
        got = list(dl.glob("*.deb"))
        if len(got) != 1:
            raise RuntimeError(f"apt-get download left {got}")
        got[0].rename(deb)
        dl.rmdir()
    else:
        # the pool directory is the *source* package's (gcc-11 for g++-11, nvidia-cuda-toolkit for
        # nvidia-cuda-dev); a "lib..." source would sit under pool/<component>/lib<x>/, none here
        src = pin.get("source", pin["package"])
        url = f"{uri}/pool/{pin['component']}/{src[0]}/{src}/{name}"
        url = url.replace("~", "%7E")
        log(f"no apt-get: GET {url}")
        with urllib.request.urlopen(url) as r, open(deb, "wb") as f:
            shutil.copyfileobj(r, f, 1 << 20)
    h = hashlib.sha256()
    with open(deb, "rb") as f:  # streamed: nvidia-cuda-dev is 774 MB
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != pin["sha256"]:
        raise RuntimeError(f"{deb.name}: sha256 {h.hexdigest()} != pinned {pin['sha256']}")
    return deb


def _deb_data(deb: pathlib.Path) -> tarfile.TarFile:
    """The data.tar.* member of a .deb (an ar archive), opened with the stdlib: same files as dpkg -x."""
    raw = deb.read_bytes()
    if raw[:8] != b"!<arch>\n":
        raise RuntimeError(f"{deb}: not an ar archive")
    pos = 8
    while pos + 60 <= len(raw):
        hdr = raw[pos:pos + 60]
        name, size = hdr[:16].decode().strip().rstrip("/"), int(hdr[48:58])
        if name.startswith("data.tar"):
            return tarfile.open(fileobj=io.BytesIO(raw[pos + 60:pos + 60 + size]))
        pos += 60 + size + (size & 1)
    raise RuntimeError(f"{deb}: no data.tar member")


def _tar_bytes(tar: tarfile.TarFile, path: str) -> bytes:
    """Read a file from the .deb's data tar, following symlinks inside the archive."""
    for _ in range(16):
        m = tar.getmember("./" + path.lstrip("/"))
        if not m.issym():
            return tar.extractfile(m).read()
        path = m.linkname if m.linkname.startswith("/") else os.path.normpath(
            os.path.join(os.path.dirname(path), m.linkname))
    raise RuntimeError(f"symlink loop at {path}")


class _Slice(io.RawIOBase):
    """The next `n` bytes of an open file, as a readable stream (one member of an ar archive)."""

    def __init__(self, f, n: int):
        self.f, self.n = f, n

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.n <= 0:
            return 0
        k = self.f.readinto(memoryview(b)[:min(len(b), self.n)])
        self.n -= k
        return k


@contextlib.contextmanager
def _deb_data_stream(deb: pathlib.Path):
    """The data.tar.* of a .deb as a stream-mode tarfile (members in archive order, one pass),
    without reading the file into memory: for nvidia-cuda-dev (774 MB) and the gcc .debs."""
    with open(deb, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise RuntimeError(f"{deb}: not an ar archive")
        while True:
            hdr = f.read(60)
            if len(hdr) < 60:
                raise RuntimeError(f"{deb}: no data.tar member")
            name, size = hdr[:16].decode().strip().rstrip("/"), int(hdr[48:58])
            if name.startswith("data.tar"):
                with tarfile.open(fileobj=io.BufferedReader(_Slice(f, size), 1 << 20), mode="r|*") as tar:
                    yield tar
                return
            f.seek(size + (size & 1), os.SEEK_CUR)


def _pip_download(work: pathlib.Path, reqs: list) -> pathlib.Path:
    """pip-download wheels (no install). Uses this interpreter's pip, else a throwaway venv's."""
    dest = work / "wheels"
    py = sys.executable
    if subprocess.run([py, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        run([py, "-m", "venv", work / "pipvenv"])
        py = str(work / "pipvenv/bin/python")
    for req in reqs:  # one call each: pip refuses two versions of one package in a single call
        run([py, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
             "--only-binary=:all:", "-d", dest, req])
    return dest


def _wheel(dest: pathlib.Path, req: str) -> zipfile.ZipFile:
    name, version = req.split("==")
    hits = glob.glob(str(dest / f"{name.replace('-', '_')}-{version}-*.whl"))
    if len(hits) != 1:
        raise RuntimeError(f"wheel for {req}: {hits}")
    return zipfile.ZipFile(hits[0])


def _put(path: pathlib.Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


# TOP-relative, so the tree works wherever it lies. It replaces the .deb's /etc/nvcc.profile, which
# names absolute Debian paths (/usr/lib/nvidia-cuda-toolkit, /usr/include).
NVCC_PROFILE_124 = """\
TOP                = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
LD_LIBRARY_PATH   += $(TOP)/lib64:
PATH              += $(TOP)/nvvm/bin:$(_HERE_):
INCLUDES          +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES          =+ $(_SPACE_) "-L$(TOP)/lib64"
"""


def _assemble_124(root: pathlib.Path, work: pathlib.Path) -> None:
    pin = PINS["12.4"]
    t0 = time.monotonic()
    deb = _fetch_deb(work, pin["deb"])
    log(f".deb ok ({deb.stat().st_size >> 20} MB, {time.monotonic() - t0:.0f} s)")
    t0 = time.monotonic()
    whl = _pip_download(work, [*pin["wheels"], pin["static_cudart_wheel"]])
    log(f"wheels ok ({time.monotonic() - t0:.0f} s)")
    t0 = time.monotonic()

    tar = _deb_data(deb)
    # /usr/bin/nvcc in the .deb is a wrapper script; the real binary and cicc live here.
    tk = "usr/lib/nvidia-cuda-toolkit/bin"
    _put(root / "bin/nvcc", _tar_bytes(tar, f"{tk}/nvcc"), 0o755)
    _put(root / "nvvm/bin/cicc", _tar_bytes(tar, f"{tk}/cicc"), 0o755)
    for m in tar.getmembers():
        if m.name.startswith(f"./{tk}/crt/") and m.name.endswith(".stub"):
            _put(root / "bin/crt" / os.path.basename(m.name), _tar_bytes(tar, m.name[2:]))
    for b in ("cudafe++", "fatbinary", "nvlink", "bin2c", "cuobjdump", "nvdisasm", "nvprune", "cu++filt"):
        _put(root / "bin" / b, _tar_bytes(tar, f"usr/bin/{b}"), 0o755)

    nvcc_whl, rt_whl, cccl_whl = (_wheel(whl, r) for r in pin["wheels"])
    # 12.4's ptxas, libnvvm and libdevice come from the wheel (the .deb expects them in other packages)
    for src, dst, mode in (("nvidia/cuda_nvcc/bin/ptxas", "bin/ptxas", 0o755),
                           ("nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so", "nvvm/lib64/libnvvm.so", 0o755),
                           ("nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc", "nvvm/libdevice/libdevice.10.bc", 0o644)):
        _put(root / dst, nvcc_whl.read(src), mode)
    # headers: crt/ (nvcc wheel), cuda_runtime*.h etc. (runtime wheel), cccl; skip the Python package files
    for z, pkg in ((nvcc_whl, "cuda_nvcc"), (rt_whl, "cuda_runtime"), (cccl_whl, "cuda_cccl")):
        pre = f"nvidia/{pkg}/include/"
        for n in z.namelist():
            if n.startswith(pre) and not n.endswith("/") and "__pycache__" not in n \
                    and not n.endswith("__init__.py"):
                _put(root / "include" / n[len(pre):], z.read(n))
    lib = root / "lib64"
    _put(lib / "libcudart.so.12", rt_whl.read("nvidia/cuda_runtime/lib/libcudart.so.12"), 0o755)
    os.symlink("libcudart.so.12", lib / "libcudart.so")  # -cudart shared / FindCUDAToolkit want the bare name
    # 12.4: nvcc's default link and CMake's compiler check need libcudart_static.a and libcudadevrt.a,
    # which no 12.4 wheel has. 12.9's libcudart_static.a links fine (the module then reports runtime
    # 12090); 12.9's libcudadevrt.a is refused (nvlink: "newer than toolkit (129 vs 124)"), so an empty
    # archive stands in (fine without -rdc / dynamic parallelism; direct nvcc links print a harmless
    # "Skipping incompatible ... libcudadevrt.a").
    _put(lib / "libcudart_static.a", _wheel(whl, pin["static_cudart_wheel"]).read(
        "nvidia/cuda_runtime/lib/libcudart_static.a"))
    _put(lib / "libcudadevrt.a", b"!<arch>\n")  # what `ar rcs` writes for an empty archive
    _put(root / "bin/nvcc.profile", NVCC_PROFILE_124.encode())
    log(f"assembled ({time.monotonic() - t0:.0f} s)")


# ---------------------------------------------------------------------------------------------
# CUDA 11.8: 12.4's recipe with bookworm's 11.8 .deb and the cu11 wheels, plus the two static
# libraries no wheel has (from nvidia-cuda-dev) and gcc 11 as nvcc's host compiler.
# ---------------------------------------------------------------------------------------------
# bin/nvcc is this script and the real nvcc is bin/nvcc.real (it finds nvcc.profile, 12.4's, next to
# itself). nvcc runs `gcc` from PATH when no -ccbin is given (CMake gives none unless
# CMAKE_CUDA_HOST_COMPILER / CUDAHOSTCXX is set): once directly, with the caller's PATH, to learn the
# host compiler's version (cudafe++ / cicc get --gnu_version=<that>), then in every host pass with
# nvcc.profile's PATH. Putting host-gcc/bin only in the profile's PATH (Debian's nvidia-cuda-toolkit
# way) gave --gnu_version=120200 (the machine's gcc 12.2) with the host passes in gcc 11.3; with the
# script both are gcc 11.3 (--gnu_version=110300). An explicit -ccbin still wins.
NVCC_WRAPPER_118 = """#!/bin/sh
# tools/cuda_toolkit.py, CUDA 11.8: gcc 11 (../host-gcc) first on PATH for nvcc's host compiler
here=$(dirname "$(readlink -f "$0")")
PATH="$here/../host-gcc/bin:$PATH" exec "$here/nvcc.real" "$@"
"""


def _unpack_host_gcc(debs: list, dest: pathlib.Path) -> None:
    """Unpack the gcc 11 .debs into dest (usr/ without usr/share) and add dest/bin/{gcc,g++}
    (the names nvcc looks for on PATH).
    gcc finds cc1plus, its headers and libstdc++'s through paths relative to its own binary, so the
    tree works wherever it lies; as / ld and the libraries cc1plus loads (libisl23, libmpc3, libmpfr6,
    libgmp10, libzstd1: gcc 12 needs the same) and libc's headers are the machine's."""
    kw = {"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}
    for deb in debs:
        with _deb_data_stream(deb) as tar:
            tar.extractall(dest, members=(m for m in tar if m.name.startswith("./usr/")
                                          and not (m.name + "/").startswith("./usr/share/")), **kw)
    # libstdc++.so, libgomp.so, … point at ../../../x86_64-linux-gnu/<lib>.so.N, i.e. outside the
    # unpacked tree: the machine's copy when it has one (gcc 12's runtime libraries, newer and
    # compatible), else the link goes (the sanitizer runtimes of gcc 11: not used here).
    for link in (dest / "usr/lib/gcc").rglob("*"):
        if link.is_symlink() and not link.exists():
            sysfile = pathlib.Path("/usr/lib/x86_64-linux-gnu") / os.path.basename(os.readlink(link))
            link.unlink()
            if sysfile.exists():
                os.symlink(sysfile, link)
    (dest / "bin").mkdir()
    os.symlink("../usr/bin/x86_64-linux-gnu-gcc-11", dest / "bin/gcc")
    os.symlink("../usr/bin/x86_64-linux-gnu-g++-11", dest / "bin/g++")
    # fail here, not in the first build, if a library cc1plus needs is missing on this machine
    subprocess.run([str(dest / "bin/g++"), "-x", "c++", "-fsyntax-only", "-"], input=b"#include <vector>\n",
                   check=True, stdout=sys.stderr)


def _assemble_118(root: pathlib.Path, work: pathlib.Path) -> None:
    pin = PINS["11.8"]
    t0 = time.monotonic()
    deb = _fetch_deb(work, pin["deb"])
    dev = _fetch_deb(work, pin["dev_deb"])
    g = pin["host_gcc"]
    gcc_debs = [_fetch_deb(work, {"suite": g["suite"], "component": g["component"], "package": name,
                                  "source": g["source"], "version": g["version"], "sha256": sha})
                for name, sha in g["sha256"].items()]
    log(f".debs ok ({time.monotonic() - t0:.0f} s)")
    t0 = time.monotonic()
    whl = _pip_download(work, pin["wheels"])
    log(f"wheels ok ({time.monotonic() - t0:.0f} s)")
    t0 = time.monotonic()

    tar = _deb_data(deb)
    # as in 12.4: /usr/bin/nvcc is Debian's wrapper script; the real nvcc and cicc live here
    tk = "usr/lib/nvidia-cuda-toolkit"
    _put(root / "bin/nvcc.real", _tar_bytes(tar, f"{tk}/bin/nvcc"), 0o755)
    _put(root / "bin/nvcc", NVCC_WRAPPER_118.encode(), 0o755)
    _put(root / "nvvm/bin/cicc", _tar_bytes(tar, f"{tk}/bin/cicc"), 0o755)
    for m in tar.getmembers():
        if m.name.startswith(f"./{tk}/bin/crt/") and m.name.endswith(".stub"):
            _put(root / "bin/crt" / os.path.basename(m.name), _tar_bytes(tar, m.name[2:]))
    # unlike 12.4's, this .deb has ptxas and libdevice (byte-identical to the nvcc-cu11 wheel's)
    for b in ("ptxas", "cudafe++", "fatbinary", "nvlink", "bin2c", "cuobjdump", "nvdisasm", "nvprune", "cu++filt"):
        _put(root / "bin" / b, _tar_bytes(tar, f"usr/bin/{b}"), 0o755)
    _put(root / "nvvm/libdevice/libdevice.10.bc", _tar_bytes(tar, f"{tk}/libdevice/libdevice.10.bc"))

    nvcc_whl, rt_whl, cccl_whl = (_wheel(whl, r) for r in pin["wheels"])
    _put(root / "nvvm/lib64/libnvvm.so", nvcc_whl.read("nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so"), 0o755)
    for z, pkg in ((nvcc_whl, "cuda_nvcc"), (rt_whl, "cuda_runtime"), (cccl_whl, "cuda_cccl")):
        pre = f"nvidia/{pkg}/include/"
        for n in z.namelist():
            if n.startswith(pre) and not n.endswith("/") and "__pycache__" not in n \
                    and not n.endswith("__init__.py"):
                _put(root / "include" / n[len(pre):], z.read(n))
    lib = root / "lib64"
    _put(lib / "libcudart.so.11.0", rt_whl.read("nvidia/cuda_runtime/lib/libcudart.so.11.0"), 0o755)
    os.symlink("libcudart.so.11.0", lib / "libcudart.so")
    want = dict(pin["dev_deb"]["files"])
    with _deb_data_stream(dev) as dtar:
        for m in dtar:
            dst = want.pop(m.name[2:], None)
            if dst:
                _put(root / dst, dtar.extractfile(m).read())
                if not want:
                    break
    if want:
        raise RuntimeError(f"{dev.name}: missing {sorted(want)}")
    _unpack_host_gcc(gcc_debs, root / "host-gcc")
    _put(root / "bin/nvcc.profile", NVCC_PROFILE_124.encode())
    log(f"assembled ({time.monotonic() - t0:.0f} s)")


# ---------------------------------------------------------------------------------------------
# CUDA 13.x (notes §2.1)
# ---------------------------------------------------------------------------------------------
def _install_13(venv: pathlib.Path, version: str) -> pathlib.Path:
    run([sys.executable, "-m", "venv", venv])
    req = PINS["13_requirement"].format(version=version if version.count(".") == 2 else version + ".*")
    run([venv / "bin/python", "-m", "pip", "install", "-q", "--disable-pip-version-check", req])
    root = _root_13(venv)
    # 13.0/13.1: nvcc.profile says lib64 but the wheels install lib/ -> "cannot find -lcudart_static"
    if not (root / "lib64").exists():
        os.symlink("lib", root / "lib64")
    # wheels ship only libcudart.so.13; -cudart shared and FindCUDAToolkit look for libcudart.so
    if not (root / "lib/libcudart.so").exists():
        os.symlink("libcudart.so.13", root / "lib/libcudart.so")
    return root


def _root_13(venv: pathlib.Path) -> pathlib.Path:
    hits = glob.glob(str(venv / "lib/python*/site-packages/nvidia/cu13"))
    if len(hits) != 1:
        raise RuntimeError(f"no unique nvidia/cu13 in {venv}: {hits}")
    return pathlib.Path(hits[0])


# ---------------------------------------------------------------------------------------------
def resolve(version: str) -> tuple:
    """'12.4' -> ('12.4', '12.4'); '11.8' -> ('11.8', '11.8'); '13.0' -> ('13.0.2', '13.0');
    '13.0.2' -> ('13.0.2', '13.0').
    Returns (version to install, major.minor that nvcc --version must report)."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not m:
        raise ValueError(f"bad CUDA version {version!r} (want e.g. 12.4, 13.0, 13.0.2, system)")
    mm = f"{m[1]}.{m[2]}"
    if mm in ("12.4", "11.8"):
        return mm, mm
    if m[1] == "13":
        if m[3] is not None:
            return version, mm
        if mm not in PINS["13"]:
            log(f"{mm} is not pinned in PINS: installing the newest {mm}.*")
        return PINS["13"].get(mm, mm), mm
    raise ValueError(f"no recipe for CUDA {version}: 11.8 / 12.4 (Debian .debs + cu11 / cu12 wheels) "
                     "or 13.x (PyPI)")


def _locate(version: str) -> tuple:
    """(cache dir, toolkit root, nvcc) for a resolved version; the root may not exist yet."""
    full, _ = resolve(version)
    d = cache_dir() / f"cuda-{full}"
    if full in ("12.4", "11.8"):
        return d, d, d / "bin/nvcc"
    hits = glob.glob(str(d / "venv/lib/python*/site-packages/nvidia/cu13"))
    root = pathlib.Path(hits[0]) if len(hits) == 1 else d / "venv/unknown"
    return d, root, root / "bin/nvcc"


def provide(version: str) -> pathlib.Path:
    """Return the nvcc of CUDA `version` ('11.8', '12.4', '13.0', '13.0.2', …, or 'system'), building the
    toolkit into the cache first if needed."""
    if version == "system":
        found = shutil.which("nvcc")
        if not found:
            raise FileNotFoundError("no nvcc on PATH")
        return pathlib.Path(found)
    d, root, nvcc = _locate(version)
    if _finished(d, nvcc):
        return nvcc
    full, mm = resolve(version)
    with locked(d.parent / f".cuda-{full}.lock"):
        d, root, nvcc = _locate(version)
        if _finished(d, nvcc):  # another process finished it while we waited
            return nvcc
        t0 = time.monotonic()
        if d.exists():
            log(f"removing unfinished {d}")
            shutil.rmtree(d)
        d.mkdir(parents=True)
        log(f"providing CUDA {full} in {d}")
        if full in ("12.4", "11.8"):
            work = pathlib.Path(tempfile.mkdtemp(prefix=f".work-cuda-{full}-", dir=d.parent))
            try:
                (_assemble_124 if full == "12.4" else _assemble_118)(d, work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
        else:
            _install_13(d / "venv", full)
        d, root, nvcc = _locate(version)
        got = nvcc_release(nvcc)
        if got != mm:
            raise RuntimeError(f"{nvcc} reports release {got}, expected {mm}")
        (d / MARKER).write_text(json.dumps({"version": full, "nvcc": str(nvcc.relative_to(d)),
                                            "seconds": round(time.monotonic() - t0, 1)}) + "\n")
        log(f"CUDA {full} ready in {time.monotonic() - t0:.0f} s")
    return nvcc


def toolkit_root(nvcc: pathlib.Path) -> pathlib.Path:
    """The directory above nvcc's bin/, as nvcc itself sees it (`_HERE_` of -dryrun): a wrapper
    script on PATH, like this machine's /usr/local/bin/nvcc, points elsewhere."""
    out = subprocess.run([str(nvcc), "-dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull],
                         capture_output=True, text=True).stderr
    m = re.search(r"^#\$ _HERE_=(.*)$", out, re.M)
    return pathlib.Path(m.group(1)).parent if m else nvcc.parent.parent


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("version", help="11.8, 12.4, 13.0 (= 13.0.2), 13.5, an explicit 13.x.y, or 'system'")
    ap.add_argument("--print-root", action="store_true", help="print the toolkit root, not nvcc")
    a = ap.parse_args(argv)
    try:
        nvcc = provide(a.version)
    except (ValueError, FileNotFoundError, RuntimeError, subprocess.CalledProcessError) as e:
        log(f"error: {e}")
        return 1
    print(toolkit_root(nvcc) if a.print_root else nvcc)
    return 0


if __name__ == "__main__":
    sys.exit(main())

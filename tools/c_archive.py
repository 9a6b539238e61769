#!/usr/bin/env python3
"""The C archive of one package: static library, headers, CMake package config, pkg-config file.

    python tools/c_archive.py norm --nvcc PATH [--archs all] [--out dist]
        -> dist/mlops-norm-0.1.0-linux-x86_64-cuda13.tar.xz (prints its path)

    from c_archive import make_c_archive; make_c_archive("norm", nvcc, "all", out_dir) -> pathlib.Path

CMake configures and builds packages/<name> (no Python module), installs component "c" into a
staging dir mlops-<name>-<version>-linux-x86_64-cuda<major>/ (lib/, include/, lib/cmake/mlops/,
lib/pkgconfig/), adds README.md (how to link) and packs it as .tar.xz. `nox -s c_archive` provides
the toolkit and calls this; cmake and ninja must be on PATH.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

README = """\
# mlops-{name} {version} — C/C++ archive (CUDA {cuda_release}, linux-x86_64)

The static library `lib/libmlops_{name}.a` with its headers (`include/mlops/`), a CMake package
(`lib/cmake/mlops/`) and a pkg-config file (`lib/pkgconfig/mlops-{name}.pc`). GPU code inside:
{archs_text}.

The directory can live anywhere: the CMake and pkg-config files find everything relative to
themselves.

## Needed at build and run time

- The CUDA runtime of CUDA {cuda_major}.x: the library links `libcudart_static.a` (static runtime,
  so nothing CUDA is needed at run time but the NVIDIA driver). Any CUDA {cuda_major}.x toolkit
  provides it: a system install (/usr/local/cuda), Debian/Ubuntu packages, conda's cuda-cudart-static,
  or PyPI's nvidia-cuda-runtime wheels.
- An NVIDIA driver that supports CUDA {cuda_release} to run on a GPU. Without a GPU the host
  functions (e.g. `mlops_norm_host`) still run.
- A C or C++ compiler; C programs link the C++ standard library (`-lstdc++ -lm`), which both
  the CMake target and the pkg-config file name.

## CMake

```cmake
find_package(mlops REQUIRED COMPONENTS {name})
target_link_libraries(app PRIVATE mlops::{name})
```

```sh
cmake -S . -B build -DCMAKE_PREFIX_PATH=/path/to/{top} -DCUDAToolkit_ROOT=/usr/local/cuda
```

`find_package(mlops)` looks up CUDAToolkit (for `CUDA::cudart_static`); set `CUDAToolkit_ROOT`
when the toolkit is not on the default paths.

## pkg-config

```sh
export PKG_CONFIG_PATH=/path/to/{top}/lib/pkgconfig
cc main.c $(pkg-config --cflags --libs mlops-{name}) -o app
```

The .pc file names the CUDA library directory of the machine that built it
(`cudalibdir={cudalibdir}`); point it at yours:

```sh
pkg-config --define-variable=cudalibdir=/usr/local/cuda/lib64 --cflags --libs mlops-{name}
```

A sample program: packages/{name}/samples/c_consumer in the mlops repository.
"""


def run(cmd, **kw) -> None:
    print("$ " + " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def package_version(name: str) -> str:
    with open(ROOT / "packages" / name / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


def archive_name(name: str, version: str, cuda_major: str) -> str:
    return f"mlops-{name}-{version}-linux-{platform.machine()}-cuda{cuda_major}"


def static_lib_archs(path) -> dict:
    """tools/sass_list.list_archs for a static library: the union over its ar members' objects."""
    import sass_list

    data = pathlib.Path(path).read_bytes()
    if data[:8] != b"!<arch>\n":
        raise ValueError(f"{path}: not an ar archive")
    found, pos = {"sass": set(), "ptx": set()}, 8
    while pos + 60 <= len(data):
        name, size = data[pos:pos + 16].strip(), int(data[pos + 48:pos + 58])
        member = data[pos + 60:pos + 60 + size]
        if name not in (b"/", b"//") and member[:4] == b"\x7fELF":
            for blob in sass_list._fatbin_sections(member):
                sass_list._scan(blob, found)
        pos += 60 + size + (size & 1)
    key = lambda a: (int(a[0]), a[1])  # noqa: E731
    return {"sass": [f"sm_{a}{s}" for a, s in sorted(found["sass"], key=key)],
            "ptx": [f"compute_{a}{s}" for a, s in sorted(found["ptx"], key=key)]}


def make_c_archive(name: str, nvcc, archs: str, out_dir, build_dir=None) -> pathlib.Path:
    """Configure, build and install (component c) packages/<name> with nvcc for archs; write
    <out_dir>/mlops-<name>-<version>-linux-x86_64-cuda<major>.tar.xz and return its path."""
    import cuda_toolkit

    nvcc = pathlib.Path(nvcc)
    release = cuda_toolkit.nvcc_release(nvcc)
    version = package_version(name)
    top = archive_name(name, version, release.split(".")[0])
    out_dir = pathlib.Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    build = pathlib.Path(build_dir) if build_dir else \
        ROOT / "build" / f"c-archive-{name}-cu{release}-{archs.replace(';', '_')}"
    with tempfile.TemporaryDirectory(prefix=f"mlops-c-{name}-") as tmp:
        stage = pathlib.Path(tmp) / top
        run(["cmake", "-S", ROOT / "packages" / name, "-B", build, "-G", "Ninja",
             f"-DCMAKE_CUDA_COMPILER={nvcc}", f"-DMLOPS_CUDA_ARCHS={archs}", "-DMLOPS_PYTHON=OFF",
             "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_INSTALL_PREFIX={stage}"])
        run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)])
        run(["cmake", "--install", build, "--component", "c", "--prefix", stage])
        lib = stage / "lib" / f"libmlops_{name}.a"
        found = static_lib_archs(lib)
        archs_text = f"SASS {', '.join(found['sass']) or 'none'}; PTX {', '.join(found['ptx']) or 'none'}"
        pc = (stage / "lib" / "pkgconfig" / f"mlops-{name}.pc").read_text()
        cudalibdir = next(ln.split("=", 1)[1] for ln in pc.splitlines() if ln.startswith("cudalibdir="))
        (stage / "README.md").write_text(README.format(
            name=name, version=version, cuda_release=release, cuda_major=release.split(".")[0],
            archs_text=archs_text, top=top, cudalibdir=cudalibdir))
        path = out_dir / f"{top}.tar.xz"
        with tarfile.open(path, "w:xz") as t:
            t.add(stage, arcname=top)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("package")
    ap.add_argument("--nvcc", required=True, help="the nvcc to build with (tools/cuda_toolkit.py prints one)")
    ap.add_argument("--archs", default="all", help="MLOPS_CUDA_ARCHS (default all: the package's whole list)")
    ap.add_argument("--out", default=str(ROOT / "dist"))
    ap.add_argument("--build-dir", default=None)
    a = ap.parse_args(argv)
    if not shutil.which("cmake") or not shutil.which("ninja"):
        print("cmake and ninja must be on PATH", file=sys.stderr)
        return 1
    print(make_c_archive(a.package, a.nvcc, a.archs, a.out, a.build_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())

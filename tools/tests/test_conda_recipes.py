"""The conda recipes (recipes/, docs/distribution.md) rendered and checked on the CPU, without a build:
every recipe x variant of recipes/variants.yaml renders with py-rattler-build, the versions and the
meta package's pins agree with the pyproject.toml files, and the CUDA recipes carry what a
conda-forge feedstock expects (compiler("cuda"), cuda-version pinning, run_exports handling, tests).
The full offline build, install and test is `nox -s conda` (minutes; its result is in docs/).
Also here: the wheels' local version +cuXYZ (tools/wheel_local_version.py) and the meta package's
~= pins resolving against such wheels.
"""
from __future__ import annotations

import base64
import hashlib
import pathlib
import re
import subprocess
import sys
import tomllib
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import conda_recipes  # noqa: E402
import wheel_local_version as wlv  # noqa: E402

CUDA_RECIPES = ["norm", "positional", "vocab", "optimizers", "attention"]


def version_of(name: str) -> str:
    with open(REPO / "packages" / name / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


@pytest.fixture(scope="module")
def rendered():
    pytest.importorskip("rattler_build")  # PINS["test"] has it; CI must not skip
    names = sorted(p.parent.name for p in (REPO / "recipes").glob("*/recipe.yaml"))
    return conda_recipes.render(names, conda_recipes.variants())


def test_every_package_has_a_recipe():
    have = {p.parent.name for p in (REPO / "recipes").glob("*/recipe.yaml")}
    pkgs = {p.parent.name for p in (REPO / "packages").glob("*/pyproject.toml")}
    assert pkgs <= have, pkgs - have
    assert set(CUDA_RECIPES) | {"mlops"} <= have
    # the build order: every package before the meta package
    order = conda_recipes.recipe_names()
    assert order[-1] == "mlops" and set(order) == {n for n in have if n == "mlops" or n in pkgs}


def test_variants_matrix(rendered):
    """Each CUDA recipe: CUDA 12.4 and 13.0 x Python 3.10 ... 3.13; the build string names both."""
    for name in CUDA_RECIPES:
        pairs = sorted((v["cuda_compiler_version"], v["python"]) for v, _ in rendered[name])
        assert pairs == [(c, p) for c in ("12.4", "13.0") for p in ("3.10", "3.11", "3.12", "3.13")], name
        for v, rec in rendered[name]:
            cu, py = v["cuda_compiler_version"].replace(".", ""), v["python"].replace(".", "")
            assert re.fullmatch(rf"cuda{cu}_py{py}h[0-9a-f]{{7}}_\d+", rec.build.string), rec.build.string
    assert len(rendered["mlops"]) == 1 and rendered["mlops"][0][1].build.noarch == "generic"


def test_versions_agree_with_pyproject(rendered):
    for name, variants in rendered.items():
        if not (REPO / "packages" / name / "pyproject.toml").exists():
            continue  # attention's recipe may land before its package
        pkg = "mlops" if name == "mlops" else f"mlops-{name}"
        for _, rec in variants:
            assert (rec.package.name, str(rec.package.version)) == (pkg, version_of(name))


def test_cuda_recipe_requirements(rendered):
    for name in CUDA_RECIPES:
        for v, rec in rendered[name]:
            d = rec.to_dict()
            req, cu = d["requirements"], v["cuda_compiler_version"]
            assert f"cuda-nvcc_linux-64 {cu}.*" in req["build"]  # ${{ compiler("cuda") }}
            assert {"gcc_linux-64 12.*", "gxx_linux-64 12.*"} <= set(req["build"])
            assert any(r.startswith("sysroot_linux-64") for r in req["build"])  # ${{ stdlib("c") }}
            assert f"cuda-version {cu}.*" in req["host"]
            assert {"python", "pip", "cuda-cudart-dev"} <= set(req["host"])
            assert any(r.startswith("scikit-build-core") for r in req["host"])
            assert any(r.startswith("nanobind") for r in req["host"])
            assert "python" in req["run"] and any(r.startswith("pytorch") for r in req["run"])
            # cudart is static: its run_exports are ignored; the compiler's cuda-version one stays
            assert set(req["ignore_run_exports"]["from_package"]) == {"cuda-cudart-dev", "cuda-cudart-static"}
            # sources reproduce the sdist's layout (cmake/ and common/include beside the package)
            srcs = d["source"] if "source" in d else d["sources"]
            assert {s.get("target_directory") for s in srcs} == {None, "cmake", "common/include"}
            for s in srcs:
                assert (REPO / "recipes" / name / s["path"]).resolve().is_dir() or name == "attention"
            kinds = [next(iter(t)) for t in d["tests"]]
            assert kinds == ["python", "script"]
            assert d["tests"][0]["python"]["imports"] == [f"mlops.{name}"]


def test_recipes_lint(rendered):
    """What conda-forge's linter asks of every recipe that this repo can state."""
    for name, variants in rendered.items():
        text = (REPO / "recipes" / name / "recipe.yaml").read_text()
        assert text.splitlines()[[i for i, line in enumerate(text.splitlines()) if not line.startswith("#")][0]] \
            == "schema_version: 1", name
        assert "conda-forge" not in re.sub(r"#.*", "", text), "no channel in a recipe"
        for _, rec in variants:
            d = rec.to_dict()
            assert d["about"]["license"] and d["about"]["summary"], name
            assert d["extra"]["recipe-maintainers"], name
            assert isinstance(d["build"]["number"], int)
            assert d.get("tests"), name


def test_meta_recipe_pins_match_pyproject(rendered):
    with open(REPO / "packages" / "mlops" / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    want = []
    for dep in deps:
        pkg, ver = dep.split("~=")
        major, minor = ver.split(".")[:2]
        want.append(f"{pkg} >={ver},<{major}.{int(minor) + 1}.0a0")  # ~=X.Y.Z == >=X.Y.Z,<X.(Y+1)
    ((_, rec),) = rendered["mlops"]
    assert rec.requirements.run == want


# --- wheels: local version +cuXYZ -------------------------------------------------------------
def _fake_wheel(dist: pathlib.Path, name: str, version: str, requires=(), dirs=False) -> pathlib.Path:
    """A minimal valid wheel (py3-none-any) with one module; `dirs`: with directory entries first,
    as auditwheel repair writes them (not in RECORD)."""
    dn = name.replace("-", "_")
    di = f"{dn}-{version}.dist-info"
    files = {
        f"{dn}_mod.py": b"X = 1\n",
        f"{di}/METADATA": ("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
                           + "".join(f"Requires-Dist: {r}\n" for r in requires)).encode(),
        f"{di}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    rec = [f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()},{len(v)}"
           for k, v in files.items()] + [f"{di}/RECORD,,"]
    files[f"{di}/RECORD"] = ("\n".join(rec) + "\n").encode()
    path = dist / f"{dn}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        if dirs:
            z.mkdir(f"{dn}_pkg")
            z.mkdir(di)
        for k, v in files.items():
            z.writestr(k, v)
    return path


@pytest.mark.parametrize("dirs", [False, True], ids=["files-only", "with-dir-entries"])
def test_local_version_name_and_metadata(tmp_path, dirs):
    whl = _fake_wheel(tmp_path, "mlops-norm", "0.1.0", dirs=dirs)
    new = wlv.set_local_version(whl, wlv.cuda_local("13.0"))
    assert new.name == "mlops_norm-0.1.0+cu130-py3-none-any.whl" and not whl.exists()
    with zipfile.ZipFile(new) as z:
        names = z.namelist()
        # RECORD lists files only (auditwheel show opens every row); directories are implied
        assert not [n for n in names if n.endswith("/")], names
        assert "mlops_norm-0.1.0+cu130.dist-info/METADATA" in names
        assert not [n for n in names if n.startswith("mlops_norm-0.1.0.dist-info")]
        assert "Version: 0.1.0+cu130\n" in z.read("mlops_norm-0.1.0+cu130.dist-info/METADATA").decode()
        record = z.read("mlops_norm-0.1.0+cu130.dist-info/RECORD").decode().splitlines()
        for line in record:
            path, digest, size = line.rsplit(",", 2)
            if digest:
                data = z.read(path)
                assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert int(size) == len(data)
    assert wlv.cuda_local("12.4") == "cu124" and wlv.cuda_local("13.0.2") == "cu130"
    with pytest.raises(ValueError):
        wlv.set_local_version(new, "cu124")  # one local label only


def test_meta_pins_resolve_local_versions(tmp_path):
    """pip's resolver takes mlops-norm 0.1.0+cu130 for the meta package's mlops-norm~=0.1.0."""
    dist = tmp_path / "dist"
    dist.mkdir()
    with open(REPO / "packages" / "mlops" / "pyproject.toml", "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    for dep in deps:
        pkg, ver = dep.split("~=")
        wlv.set_local_version(_fake_wheel(dist, pkg, ver), "cu130")
    _fake_wheel(dist, "mlops", version_of("mlops"), requires=deps)
    target = tmp_path / "target"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
                          "-f", str(dist), "--target", str(target), "mlops"], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    got = sorted(p.name for p in target.glob("*.dist-info"))
    assert got == sorted([f"mlops-{version_of('mlops')}.dist-info"]
                         + [f"{d.split('~=')[0].replace('-', '_')}-{d.split('~=')[1]}+cu130.dist-info" for d in deps])


def test_standin_python_pin():
    """python's run_exports in the stand-in channel (python shim, pytorch, test extras): X.Y only."""
    import conda_standin

    assert conda_standin.python_pin("3.12") == "python >=3.12,<3.13.0a0"
    assert conda_standin.python_pin("3.10.13") == "python >=3.10,<3.11.0a0"
    assert conda_standin.python_pin("3.9") == "python >=3.9,<3.10.0a0"


def test_standin_wheel_requires_markers():
    """A noarch stand-in package keeps a Requires-Dist with a marker when the marker holds for one of the
    channel's Pythons: scikit-build-core 1.1.2 and pytest 9.2.0 need tomli / exceptiongroup on 3.10
    (nox -s conda -- --python 3.10 failed with "No module named 'tomli'" when markers were dropped)."""
    import conda_standin

    meta = ("Name: scikit-build-core\nRequires-Dist: exceptiongroup>=1.0; python_version < '3.11'\n"
            "Requires-Dist: packaging>=23.2\nRequires-Dist: tomli>=1.2.2; python_version < '3.11'\n"
            "Requires-Dist: colorama>=0.4; sys_platform == \"win32\"\n"
            "Requires-Dist: pytest>=6; extra == \"test\"\nRequires-Dist: Typing_Extensions (>=4)\n")
    plain = ["packaging >=23.2", "typing-extensions >=4"]
    assert conda_standin.wheel_requires(meta, ["3.11"]) == plain
    assert conda_standin.wheel_requires(meta, ["3.13"]) == plain
    assert conda_standin.wheel_requires(meta, ["3.10"]) == ["exceptiongroup >=1.0", "packaging >=23.2",
                                                            "tomli >=1.2.2", "typing-extensions >=4"]
    assert conda_standin.wheel_requires(meta, ["3.12", "3.10"]) == conda_standin.wheel_requires(meta, ["3.10"])
    # the stand-in ships the wheels those markers ask for on 3.10
    assert {"tomli", "exceptiongroup", "typing-extensions"} <= set(conda_standin.WHEELS)


def _other_pythons():
    import glob
    import os

    mine = f"{sys.version_info.major}.{sys.version_info.minor}"
    found = []
    for v in ("3.10", "3.12", "3.13"):
        exe = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{v}.*/bin/python{v}")))
        if exe and v != mine:
            found.append((v, exe[-1]))
    return found[:1] or [pytest.param(None, None, marks=pytest.mark.skip(reason="no other pyenv Python"))]


@pytest.mark.parametrize("ver,exe", [(f"{sys.version_info.major}.{sys.version_info.minor}", sys.executable),
                                     *_other_pythons()])
def test_standin_links_another_interpreters_packages(tmp_path, ver, exe):
    """The stand-in's pytorch / mlops-test-extras link the packages of the interpreter they name (nox -s
    conda -- --python 3.12 gives a venv of 3.12): the closure is taken in that interpreter (dists_of runs
    conda_standin.py --report there), pinned to its X.Y, and every top-level entry is linked."""
    import conda_standin

    rep = conda_standin.dists_of(exe, ["pip"])
    assert rep["python"] == ver
    (pip,) = [d for d in rep["dists"] if d["name"].lower() == "pip"]
    assert any(pathlib.Path(t).name == "pip" and pathlib.Path(t).is_dir() for t in pip["tops"]), pip
    assert all(f"python{ver}" in t for t in pip["tops"]), pip["tops"]  # that interpreter's site-packages
    site = tmp_path / "site"
    conda_standin._link_dists(rep["dists"], site)
    assert (site / "pip").is_symlink() and (site / "pip" / "__init__.py").exists()
    rep = conda_standin.dists_of(exe, ["pip"], exclude=["pip"])
    assert not [d for d in rep["dists"] if d["name"].lower() == "pip"]

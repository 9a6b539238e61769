#!/usr/bin/env python3
"""Build recipes/*/recipe.yaml into a local conda channel with py-rattler-build, install from it with
py-rattler (the "conda install" of a machine without a conda client), offline. `nox -s conda` runs it.

    python tools/conda_recipes.py render [--variants recipes/variants.yaml]
        every recipe x variant rendered (no build): what the CI test checks
    python tools/conda_recipes.py build --out CHANNEL --channel STANDIN [--python 3.11] [--cuda 13.0] [NAME ...]
        NAMEs (default: every recipe, dependency order) for one Python x CUDA pair of the variants,
        into CHANNEL (a plain conda channel: linux-64/, noarch/, repodata.json), then index_fs
    python tools/conda_recipes.py install --prefix P --channel CHANNEL --channel STANDIN SPEC ...
        solve + install into a new prefix (py-rattler), prints the records

Channels are what --channel names, in priority order: local folders (nox -s conda: the built channel
and tools/conda_standin.py's), or `conda-forge` where it is reachable. Never implicit: run_build
would default to conda-forge (../shared/notes/conda-offline.md). MLOPS_CUDA_ARCHS in the environment narrows the archs the
recipes build (default: all of each package's list the toolkit supports).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
# dependency order: the meta package last (builds are not reordered by run dependencies)
ORDER = ["norm", "positional", "vocab", "attention", "optimizers", "mlops"]


def recipe_names() -> list[str]:
    """Every recipe whose package exists (attention's recipe may land before its package)."""
    found = [p.parent.name for p in RECIPES.glob("*/recipe.yaml")]
    have = [n for n in found if n == "mlops" or (ROOT / "packages" / n / "pyproject.toml").exists()]
    return [n for n in ORDER if n in have] + sorted(n for n in have if n not in ORDER)


def variants(python: str | None = None, cuda: str | None = None):
    """recipes/variants.yaml, optionally narrowed to one Python and one CUDA."""
    from rattler_build import VariantConfig

    text = (RECIPES / "variants.yaml").read_text()
    if python:
        text = re.sub(r"(?m)^python:.*$", f'python: ["{python}"]', text)
    if cuda:
        text = re.sub(r"(?m)^cuda_compiler:.*$", "cuda_compiler: [cuda-nvcc]", text)
        text = re.sub(r"(?m)^cuda_compiler_version:.*$", f'cuda_compiler_version: ["{cuda}"]', text)
    return VariantConfig.from_yaml(text)


def render(names, variant_config) -> dict:
    """{name: [(variant dict, rendered recipe)]}"""
    from rattler_build import Stage0Recipe

    out = {}
    for name in names:
        recipe = Stage0Recipe.from_file(str(RECIPES / name / "recipe.yaml"))
        out[name] = [(dict(r.variant), r.recipe) for r in recipe.render(variant_config=variant_config)]
    return out


def build(names, out: pathlib.Path, channels, variant_config, log=print):
    from rattler.index import index_fs
    from rattler_build import Stage0Recipe, ToolConfiguration
    from rattler_build.progress import SimpleProgressCallback

    out.mkdir(parents=True, exist_ok=True)
    # local folders become file:// URLs; a name or URL (conda-forge, where reachable) passes as is
    urls = [pathlib.Path(c).resolve().as_uri() if pathlib.Path(c).exists() else c for c in channels]
    times = {}
    for name in names:
        t0 = time.time()
        recipe = Stage0Recipe.from_file(str(RECIPES / name / "recipe.yaml"))
        for r in recipe.run_build(variant_config=variant_config, output_dir=str(out), channels=urls,
                                  tool_config=ToolConfiguration(test_strategy="native"), no_build_id=True,
                                  progress_callback=SimpleProgressCallback()):
            log(f"built {r.name} {r.version} {r.build_string}: {[str(p) for p in r.packages]}")
        times[name] = time.time() - t0
        log(f"{name}: {times[name]:.0f} s")
    asyncio.run(index_fs(out, write_zst=False, write_shards=False, force=True))
    for p in out.glob("*/*.conda"):
        p.chmod(0o644)  # built packages get 0600 (notes 3)
    return times


async def _install(prefix, channels, specs):
    from rattler import MatchSpec, VirtualPackage, VirtualPackageOverrides, install, solve

    records = await solve(sources=[str(pathlib.Path(c).resolve()) for c in channels], specs=specs,
                          platforms=["linux-64", "noarch"],
                          virtual_packages=VirtualPackage.detect(VirtualPackageOverrides.from_env()))
    await install(records, target_prefix=str(prefix), show_progress=False,
                  requested_specs=[MatchSpec(s)._match_spec for s in specs])
    return records


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render")
    r.add_argument("names", nargs="*")
    b = sub.add_parser("build")
    b.add_argument("--out", type=pathlib.Path, required=True)
    b.add_argument("--channel", action="append", default=[])
    b.add_argument("--python")
    b.add_argument("--cuda")
    b.add_argument("names", nargs="*")
    i = sub.add_parser("install")
    i.add_argument("--prefix", type=pathlib.Path, required=True)
    i.add_argument("--channel", action="append", default=[])
    i.add_argument("specs", nargs="+")
    a = ap.parse_args(argv)
    rc = 0
    if a.cmd == "render":
        for name, vs in render(a.names or recipe_names(), variants()).items():
            for v, rec in vs:
                print(name, rec.package.version, rec.build.string,
                      v.get("python", "noarch"), v.get("cuda_compiler_version", ""))
    elif a.cmd == "build":
        times = build(a.names or recipe_names(), a.out, a.channel, variants(a.python, a.cuda))
        print("times:", {k: round(v) for k, v in times.items()})
    else:
        records = asyncio.run(_install(a.prefix, a.channel, a.specs))
        for rec in records:
            print("installed", rec.name.normalized, rec.version, rec.build)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)  # py-rattler 0.28 may crash at interpreter teardown after the work is done (notes 3)


if __name__ == "__main__":
    main()

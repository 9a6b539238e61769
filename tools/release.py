#!/usr/bin/env python3
"""Release check: a package's version, its CHANGELOG.md entry and its git tag must agree.

    python tools/release.py check norm            # exit 1 and the reasons if they do not
    python tools/release.py check mlops           # the meta package (also: its ~= pins)
    from release import check; problems = check("norm", repo)   # [] when releasable

NAME is the folder under packages/ (norm, positional, vocab, optimizers, attention, mlops); the tag
is `<NAME>-v<version>` (norm-v0.1.0, mlops-v0.1.0), made by hand on the release commit
(`git tag -a norm-v0.1.0 -m "mlops-norm 0.1.0"`) and pushed by the maintainer, never by a tool.
`nox -s release -- NAME` runs the check, then makes that package's artifacts.

What agrees means:
  * packages/NAME/pyproject.toml `version` == the tag's version (the tag must exist);
  * the tag points at HEAD (the artifacts are built from HEAD's files), and packages/NAME, cmake/
    and packages/common have no uncommitted changes (else the artifacts would not be the tag's);
  * packages/NAME/CHANGELOG.md has a `## <version>` heading that is not marked `(unreleased)`;
  * for mlops (the meta package): each pin `mlops-<pkg>~=X` in its pyproject is that package's version.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def version(repo: pathlib.Path, name: str) -> str:
    with open(repo / "packages" / name / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["version"]


def tag_name(name: str, ver: str) -> str:
    return f"{name}-v{ver}"


def changelog_entry(repo: pathlib.Path, name: str, ver: str) -> str | None:
    """The `## <ver> ...` heading line of packages/NAME/CHANGELOG.md, or None."""
    path = repo / "packages" / name / "CHANGELOG.md"
    if not path.is_file():
        return None
    for line in path.read_text().splitlines():
        m = re.match(r"^##\s+v?(\S+)(.*)$", line)
        if m and m.group(1) == ver:
            return line
    return None


def _git(repo, *args) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def check(name: str, repo: pathlib.Path = ROOT) -> list[str]:
    repo = pathlib.Path(repo)
    if not (repo / "packages" / name / "pyproject.toml").is_file():
        return [f"packages/{name}/pyproject.toml not found"]
    problems = []
    ver = version(repo, name)
    tag = tag_name(name, ver)
    entry = changelog_entry(repo, name, ver)
    if entry is None:
        problems.append(f"packages/{name}/CHANGELOG.md has no '## {ver}' entry")
    elif "unreleased" in entry.lower():
        problems.append(f"packages/{name}/CHANGELOG.md: the {ver} entry is marked unreleased ({entry.strip()!r}): "
                        "date it in the release commit")
    tag_commit = _git(repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}")
    if tag_commit.returncode != 0:
        others = _git(repo, "tag", "--list", f"{name}-v*").stdout.split()
        problems.append(f"no git tag {tag} (pyproject says {ver}; tags of {name}: {others or 'none'})")
    else:
        head = _git(repo, "rev-parse", "HEAD^{commit}").stdout.strip()
        if tag_commit.stdout.strip() != head:
            problems.append(f"tag {tag} is at {tag_commit.stdout.strip()[:12]}, not at HEAD {head[:12]}")
        dirty = _git(repo, "status", "--porcelain", "--", f"packages/{name}", "cmake", "packages/common").stdout
        if dirty.strip():
            problems.append(f"uncommitted changes in the released files:\n{dirty.rstrip()}")
    if name == "mlops":
        with open(repo / "packages" / "mlops" / "pyproject.toml", "rb") as f:
            deps = tomllib.load(f)["project"]["dependencies"]
        for dep in deps:
            m = re.match(r"^mlops-([a-z]+)~=(\S+)$", dep)
            if not m:
                problems.append(f"meta pin {dep!r} is not 'mlops-<name>~=<version>'")
            elif (repo / "packages" / m.group(1) / "pyproject.toml").is_file() and version(repo, m.group(1)) != m.group(2):
                problems.append(f"meta pin {dep!r}: packages/{m.group(1)} is {version(repo, m.group(1))}")
    return problems


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("name")
    c.add_argument("--repo", type=pathlib.Path, default=ROOT)
    a = ap.parse_args(argv)
    problems = check(a.name, a.repo)
    ver = version(a.repo, a.name) if (a.repo / "packages" / a.name / "pyproject.toml").is_file() else "?"
    if problems:
        print(f"{a.name} {ver}: not releasable:\n  - " + "\n  - ".join(problems), file=sys.stderr)
        return 1
    print(f"{a.name} {ver}: version, CHANGELOG entry and tag {tag_name(a.name, ver)} agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())

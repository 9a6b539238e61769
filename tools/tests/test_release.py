"""tools/release.py check (what `nox -s release -- NAME` runs first): the package version, its
CHANGELOG.md entry and the git tag NAME-v<version> must agree. In a throwaway git repo in a temp
dir holding copies of the real packages/norm and packages/mlops metadata; tags are made only there.
"""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import release  # noqa: E402

PKGS = ["norm", "positional", "vocab", "optimizers", "mlops"]


def git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "tag.gpgSign=false",
                    "-c", "commit.gpgSign=false", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path):
    """packages/<pkg>/{pyproject.toml,CHANGELOG.md} of the real repo, committed, changelogs dated."""
    r = tmp_path / "repo"
    for p in PKGS:
        d = r / "packages" / p
        d.mkdir(parents=True)
        shutil.copy(REPO / "packages" / p / "pyproject.toml", d)
        text = (REPO / "packages" / p / "CHANGELOG.md").read_text()
        ver = release.version(REPO, p)
        # the release commit dates the entry
        text = re.sub(rf"(?m)^##\s+{re.escape(ver)}\s*\(unreleased\)", f"## {ver} (2026-11-30)", text)
        (d / "CHANGELOG.md").write_text(text)
    (r / "cmake").mkdir()
    (r / "cmake" / "mlops.cmake").write_text("# x\n")
    git(tmp_path, "init", "-q", "-b", "main", str(r))
    git(r, "add", ".")
    git(r, "commit", "-q", "-m", "release")
    return r


def test_real_changelogs_have_an_entry_for_their_version():
    for p in PKGS:
        assert release.changelog_entry(REPO, p, release.version(REPO, p)), p


def test_agree(repo):
    git(repo, "tag", "-a", "norm-v0.1.0", "-m", "mlops-norm 0.1.0")
    assert release.check("norm", repo) == []
    assert release.main(["check", "norm", "--repo", str(repo)]) == 0


def test_missing_tag(repo):
    (p,) = release.check("norm", repo)
    assert "no git tag norm-v0.1.0" in p


def test_tag_of_another_version(repo):
    git(repo, "tag", "norm-v0.0.9")
    (p,) = release.check("norm", repo)
    assert "no git tag norm-v0.1.0" in p and "norm-v0.0.9" in p


def test_version_bumped_after_tag(repo):
    git(repo, "tag", "norm-v0.1.0")
    py = repo / "packages" / "norm" / "pyproject.toml"
    py.write_text(py.read_text().replace('version = "0.1.0"', 'version = "0.1.1"'))
    git(repo, "commit", "-q", "-am", "bump")
    problems = release.check("norm", repo)
    assert any("no '## 0.1.1' entry" in p for p in problems)
    assert any("no git tag norm-v0.1.1" in p for p in problems)


def test_tag_not_at_head(repo):
    git(repo, "tag", "norm-v0.1.0")
    (repo / "packages" / "norm" / "README.md").write_text("later\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "later")
    (p,) = release.check("norm", repo)
    assert "not at HEAD" in p


def test_uncommitted_changes(repo):
    git(repo, "tag", "norm-v0.1.0")
    (repo / "cmake" / "mlops.cmake").write_text("# changed\n")
    (p,) = release.check("norm", repo)
    assert "uncommitted" in p and "cmake/mlops.cmake" in p


def test_unreleased_changelog(repo):
    cl = repo / "packages" / "norm" / "CHANGELOG.md"
    cl.write_text(cl.read_text().replace("## 0.1.0 (2026-11-30)", "## 0.1.0 (unreleased)"))
    git(repo, "commit", "-q", "-am", "undate")
    git(repo, "tag", "norm-v0.1.0")
    (p,) = release.check("norm", repo)
    assert "unreleased" in p
    assert release.main(["check", "norm", "--repo", str(repo)]) == 1


def test_meta_pins(repo):
    git(repo, "tag", "mlops-v0.1.0")
    assert release.check("mlops", repo) == []
    py = repo / "packages" / "vocab" / "pyproject.toml"
    py.write_text(py.read_text().replace('version = "0.1.0"', 'version = "0.2.0"'))
    git(repo, "commit", "-q", "-am", "vocab 0.2.0")
    git(repo, "tag", "-f", "mlops-v0.1.0")
    (p,) = release.check("mlops", repo)
    assert "mlops-vocab~=0.1.0" in p and "0.2.0" in p


def test_unknown_package(repo):
    assert release.check("nope", repo) == ["packages/nope/pyproject.toml not found"]

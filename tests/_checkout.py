"""A fresh checkout of this repository in a temporary folder: its tracked files, nothing else."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def tracked_files(root: Path = ROOT) -> list[str]:
    """Paths (relative to ``root``) of the files git tracks; skips the test outside a git checkout."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the tracked files of the checkout cannot be listed")
    done = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"{root} is not a git checkout (git ls-files: {done.stderr.strip()})")
    return [name for name in done.stdout.split("\0") if name]


def copy_checkout(dest: Path, root: Path = ROOT) -> Path:
    """Copy the tracked files of ``root`` (as they are in its work tree) into ``dest``; returns ``dest``.

    Nothing untracked comes along (no ``.venv``, build output or files a previous run left).
    """
    for name in tracked_files(root):
        source = root / name
        if not source.is_file():  # deleted in the work tree but not yet committed
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return dest

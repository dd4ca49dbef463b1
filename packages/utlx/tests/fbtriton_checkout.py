"""Meta's Triton fork (facebookexperimental/triton) at a pinned commit, read from a folder the user provides.

Why a folder named by an environment variable: the fork's TLX language and tutorials are on GitHub, not on
PyPI, so neither CI nor this repo can fetch them, and this repo must not copy them. A test that needs them
reads ``$UTLX_FBTRITON_DIR`` (a git checkout of the fork; only ``third_party/tlx/`` is read) and skips, saying
why, when it is unset or holds another commit (a different commit is a different corpus: the counts in
``docs/utlx.md`` are for the pin). ``UTLX_FBTRITON_ANY_COMMIT=1`` accepts any commit, for trying a newer one.

Getting the files (about 3 MB)::

    git clone --no-checkout https://github.com/facebookexperimental/triton "$DIR"
    git -C "$DIR" sparse-checkout set --no-cone /third_party/tlx/
    git -C "$DIR" checkout db4666f22c1f8b206584c3f06e3b4a0ff035989e
    export UTLX_FBTRITON_DIR="$DIR"

Stdlib only: the corpus runner imports it in its own process.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

PIN = "db4666f22c1f8b206584c3f06e3b4a0ff035989e"
ENV_DIR = "UTLX_FBTRITON_DIR"
ENV_ANY = "UTLX_FBTRITON_ANY_COMMIT"
TUTORIALS = Path("third_party") / "tlx" / "tutorials"
LANGUAGE = Path("third_party") / "tlx" / "language" / "tlx"

_reason: list[str] = []


def _head(root: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def checkout() -> Path | None:
    """The fork's checkout at the pinned commit, or None (then :func:`unavailable_reason` says why)."""
    _reason.clear()
    value = os.environ.get(ENV_DIR, "").strip()
    if not value:
        _reason.append(f"{ENV_DIR} is not set: check out facebookexperimental/triton at {PIN[:12]} and point "
                       f"{ENV_DIR} at it (see packages/utlx/tests/fbtriton_checkout.py or docs/utlx.md)")
        return None
    root = Path(value).expanduser()
    if not (root / TUTORIALS).is_dir() or not (root / LANGUAGE).is_dir():
        _reason.append(f"{ENV_DIR}={root} holds no {TUTORIALS} and {LANGUAGE}")
        return None
    head = _head(root)
    if head != PIN and os.environ.get(ENV_ANY, "").strip() in ("", "0"):
        _reason.append(f"{ENV_DIR}={root} is at commit {head or '(not a git checkout)'}, not the pinned {PIN} "
                       f"(set {ENV_ANY}=1 to use it anyway)")
        return None
    return root


def unavailable_reason() -> str:
    return _reason[-1] if _reason else f"{ENV_DIR} was not looked up"


def tutorials_dir() -> Path | None:
    root = checkout()
    return None if root is None else root / TUTORIALS


def language_dir() -> Path | None:
    root = checkout()
    return None if root is None else root / LANGUAGE

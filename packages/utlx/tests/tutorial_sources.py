"""What the tutorial suites (Meta's wheel tutorials, the fbtriton checkout's AMD tutorials) share: a source of
tutorial files that may be unavailable on this machine, in which case the tests that need it skip, saying why."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pytest


class TutorialSource(Protocol):
    """A module that finds a folder of tutorials (``meta_wheel``, ``fbtriton_checkout``)."""

    def tutorials_dir(self) -> Path | None: ...

    def unavailable_reason(self) -> str: ...


def tutorials_or_skip(source: TutorialSource) -> Path:
    """``source``'s tutorial folder; skips the requesting test with ``source``'s reason when there is none."""
    found = source.tutorials_dir()
    if found is None:
        pytest.skip(source.unavailable_reason())
    return found

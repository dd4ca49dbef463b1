"""The one parser of Triton version strings, for both packages (standard library only: no triton import).

Why one: three parsers used to disagree on suffixes (``"3.8rc1"`` read as 3.8.1 by one of them). Here
only the leading digits of each of the first three dot-separated parts count, so release candidates,
dev builds and local versions read as their release: ``"3.8.0rc1"``, ``"3.8.0.dev0"``, ``"3.8.0+git1a2b"``,
``"3.8rc1"`` are all (3, 8, 0).
"""

from __future__ import annotations

import re

_DECLARED = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)


def parse_version(text: str) -> tuple[int, int, int]:
    """``"3.8.0+git1234"`` -> ``(3, 8, 0)``; missing or non-numeric parts count as 0."""
    parts: list[int] = []
    for piece in text.split("+")[0].split(".")[:3]:
        digits = ""
        for ch in piece.strip():
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return parts[0], parts[1], parts[2]


def release(text: str) -> str:
    """The release part of a version string, the part libtriton compares (``"3.8.0+abc"`` -> ``"3.8.0"``)."""
    return text.split("+")[0].strip()


def release_key(version: tuple[int, int, int]) -> str:
    """``(3, 8, 0)`` -> ``"3.8.0"`` (how ``data/passmap.json`` names versions)."""
    return "{}.{}.{}".format(*version)


def declared_version(init_source: str) -> str | None:
    """The ``__version__ = "..."`` a package's ``__init__.py`` declares (read without importing it)."""
    match = _DECLARED.search(init_source)
    return match.group(1) if match else None

"""The installed Triton's version, parsed once (:mod:`.version`), and the facts that follow from it alone."""

from __future__ import annotations

import triton

from .version import parse_version, release_key

SUPPORTED = ((3, 6), (3, 9))  # inclusive range of (major, minor)

TRITON_VERSION_STR: str = triton.__version__
TRITON_VERSION: tuple[int, int, int] = parse_version(TRITON_VERSION_STR)
#: ``"3.8.0"``: the installed release as ``data/passmap.json`` names it.
TRITON_RELEASE: str = release_key(TRITON_VERSION)

#: Triton >= 3.7 calls the stages hook with no arguments to get ``(key, hash)``: once per compile for
#: the on-disk key and once per launch for the in-memory key. 3.6 never does.
HOOK_HAS_KEY_CALL: bool = TRITON_VERSION[:2] >= (3, 7)

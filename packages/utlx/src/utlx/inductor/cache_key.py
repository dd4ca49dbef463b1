"""utlx.inductor's part of torch.compile's cache keys: a graph compiled with utlx's templates is never served
to a compile without them, nor one compiled by another utlx.

Why: Inductor's FX graph cache (local and remote, and the AOTAutograd cache above it) keys a graph by the graph,
torch's and Triton's versions and Inductor's config, and stores the generated module with its Triton binaries.
Nothing of that sees ``utlx.inductor``'s seams, so without this a process with the integration off was served
the utlx kernels a process with it on had cached (and the other way round), and after a utlx upgrade that fixed
a template the old template's binary was still served. torch's supported way to add to those keys is
``torch.compiler.config.cache_key_tag`` ("to be included in the cache key generation for all torch compile
caching"): :func:`apply` appends utlx's tag to whatever tag the user set, :func:`remove` puts the user's back
(a declared slot seam, :data:`SEAM`, so ``tritonx doctor`` lists it while it is in place).

The tag: the mode and a digest of what the templates are and call: the utlx package (its distribution's
version and file list for an installed wheel, its sources for a checkout), tritonx (which compiles the TLX ops),
and the template choices as they are configured now (``gemm.WS_CONFIGS = ()``, say, changes the key).
"""

from __future__ import annotations

import functools
import hashlib
from typing import Any

from tritonx.seams import Seam, read_slot, release_slot, write_slot

#: Marks utlx's part of the tag (``<user tag>|utlx.inductor=<mode>:<digest>``).
MARK = "utlx.inductor="


def _where() -> tuple[Any, str]:
    import torch.compiler.config as cconfig

    if not hasattr(cconfig, "cache_key_tag"):
        raise RuntimeError("utlx.inductor: this torch has no torch.compiler.config.cache_key_tag, so utlx cannot key "
                           "torch.compile's caches by the integration; it stays off")
    return cconfig, "cache_key_tag"


def check() -> None:
    """Raise (one line) where this torch cannot carry utlx's part of the cache key: before anything is installed."""
    _where()


SEAM = Seam("utlx.inductor-cache-key", where=_where, slot=True,
            reason="torch.compile's caches must not serve a graph compiled with (another) utlx's templates")


@functools.cache
def _package_digest() -> str:
    """utlx's and tritonx's code (tritonx compiles the TLX ops the templates use)."""
    from tritonx import package_key

    return ";".join(package_key(top) for top in ("utlx", "tritonx"))


def tag(mode: str, choices: str) -> str:
    """utlx's part of the cache key tag for ``mode`` (``allow`` / ``force``) and the template ``choices`` (their
    configuration as text: :func:`utlx.inductor._choices_now`)."""
    digest = hashlib.sha256(f"{_package_digest()}|{choices}".encode()).hexdigest()[:20]
    return f"{MARK}{mode}:{digest}"


def _user_part(current: str) -> str:
    """The tag without utlx's part (what the user, or another library, set)."""
    current = current or ""
    at = current.find(MARK)
    return current if at < 0 else current[:at].removesuffix("|")


def apply(mode: str, choices: str) -> None:
    """Put utlx's tag for ``mode`` and ``choices`` into torch.compile's cache key tag (replacing an earlier one)."""
    user = _user_part(read_slot(SEAM))
    mine = tag(mode, choices)
    write_slot(SEAM, f"{user}|{mine}" if user else mine)


def remove() -> None:
    """Take utlx's tag out again: the tag is what it was before :func:`apply`."""
    current = read_slot(SEAM)
    if current and MARK in current:
        release_slot(SEAM, _user_part(current))

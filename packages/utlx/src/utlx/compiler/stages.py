"""Run the utlx lowering inside Triton's ``make_ttgir`` stage, right after the TTIR -> TTGIR conversion.

Two ways in, one pass body (:func:`lowering_pass`):

* the product path: the tritonx plugin (:mod:`utlx.plugin`) inserts :func:`lowering_pass` after
  ``convert-triton-to-tritongpu`` through a tritonx ``Pipeline``; tritonx owns Triton's stages hook.
* a standalone path for when tritonx-core is not importable (or not yet activated):
  :func:`install_standalone_hook` wraps the ``ttgir`` stage itself. It runs the conversion pass alone,
  lowers, then runs the stock stage with its conversion pass skipped. It chains any hook already set.

Both leave kernels without TLX ops untouched: the lowering returns at once when no placeholder exists.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from pathlib import Path
from typing import Any

from utlx import compat

from . import amd_passes, copy_width, downgrade, placeholder
from .lowering import lower_module, restore_async_waits

_LOCK = threading.RLock()
_STANDALONE: dict[str, Any] = {}


def _source_digest() -> str:
    """Hash of utlx's compile-path sources: any edit to how TLX ops are traced or lowered changes it."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in [*sorted(root.glob("*.py")), root.parent / "compat.py"]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


#: What utlx's lowering emits, as it enters Triton's cache key (3.7+; 3.6 through tritonx's key). Derived
#: from the sources, so a changed lowering can never be served a binary the old one built (no manual bump
#: to forget). It also names the async_load fallback mode (read once at import), so strict and fallback
#: builds never share a cache entry.
LOWERING_VERSION = (f"utlx-lowering-{_source_digest()}" + ("" if copy_width.FALLBACK else "-strict-cp-async")
                    + ("-strict-amd" if downgrade.STRICT else ""))


def restore_waits_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass (after the software pipeliner): restore TLX cp.async wait counts."""
    restore_async_waits(module)


def lowering_pass(module: Any, ctx: Any = None) -> None:
    """tritonx Python pass: lower utlx placeholders of ``module`` (a no-op for plain Triton kernels)."""
    arch = None
    options = getattr(ctx, "options", None)
    if options is not None:
        arch = getattr(options, "arch", None)
    lower_module(module, arch)


@contextlib.contextmanager
def _skip_adders(adders: list[tuple[Any, str]]):
    """Make the given pass adders no-ops while the stock stage runs."""
    saved = [(owner, name, getattr(owner, name)) for owner, name in adders]
    for owner, name, _ in saved:
        setattr(owner, name, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def _convert_args(options: Any, capability: Any) -> tuple:
    if capability is not None:  # NVIDIA
        return (f"cuda:{capability}", options.num_warps, 32, options.num_ctas)
    return (f"hip:{options.arch}", options.num_warps, options.warp_size, options.num_ctas)


def _wrap_ttgir(stage: Any, options: Any, capability: Any) -> Any:
    def ttgir(src: Any, metadata: Any) -> Any:
        if not placeholder.collect(src):
            return stage(src, metadata)
        from triton._C.libtriton import ir, passes

        pm = ir.pass_manager(src.context)
        passes.ttir.add_convert_to_ttgpuir(pm, *_convert_args(options, capability))
        compat.run_passes(pm, src, "utlx-convert")
        lower_module(src, getattr(options, "arch", None))
        # Skip the conversion (done above) and Triton's software pipeliner: a TLX kernel pipelines
        # itself, and the pipeliner would rewrite its cp.async wait counts (see lowering.restore_async_waits).
        skipped = [compat.convert_to_ttgpuir_adder(), *compat.software_pipeliner_adders()]
        if capability is None and amd_passes.has_ops(src, amd_passes.BUFFER_OPS):
            from triton._C.libtriton import amd

            skipped.append((amd.passes.ttgpuir, "add_canonicalize_pointers"))  # see amd_passes
        with _LOCK, _skip_adders(skipped):
            out = stage(src, metadata)
        amd_passes.end_of_ttgir_pass(out)
        return out

    ttgir.__utlx_wrapped__ = True
    return ttgir


def install_standalone_hook() -> None:
    """Set Triton's stages hook to one that lowers utlx ops (chaining the hook found there)."""
    get, set_ = compat.stages_hook_slot()
    current = get()
    if getattr(current, "__utlx_hook__", False):
        return
    previous = current

    def hook(*args: Any) -> Any:
        if not args:  # cache-key call (Triton >= 3.7)
            key, digest = ("", "")
            if previous is not None:
                key, digest = previous()
            return key + LOWERING_VERSION, f"{digest}{LOWERING_VERSION}"
        if previous is not None:
            previous(*args)
        _backend, stages, options, _language, capability = args
        if "ttgir" in stages and not getattr(stages["ttgir"], "__utlx_wrapped__", False) and "ttir" in stages:
            stages["ttgir"] = _wrap_ttgir(stages["ttgir"], options, capability)
        return None

    hook.__utlx_hook__ = True
    _STANDALONE["previous"] = previous
    set_(hook)


def uninstall_standalone_hook() -> None:
    """Restore the hook that was set before :func:`install_standalone_hook`."""
    get, set_ = compat.stages_hook_slot()
    if getattr(get(), "__utlx_hook__", False):
        set_(_STANDALONE.pop("previous", None))

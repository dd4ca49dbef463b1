"""Check ``--target`` against the archs the installed Triton can compile for, before anything compiles.

Why up front: Triton takes any number as a CUDA compute capability and fails only in ``ptxas``, after
the whole pipeline ran, with a fatal error, a repro command and a ``.ptx`` file left in the temp
folder (``cuda:999``, ``cuda:0``). The CUDA list comes from the installed backend itself: the sm name
Triton derives from a capability (``sm_arch_from_capability``) must be one the ``ptxas`` Triton runs
for that capability lists as a ``--gpu-name`` value in its ``--help``. AMD's compiler has no such
query, so the HIP list is :data:`HIP_ARCHS`; a listed arch this Triton refuses still fails with
Triton's own one-line ``unsupported target`` error.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from typing import Any

from ..model.target import Target
from ._common import UserError

#: The gfx archs Triton's AMD backend (3.6-3.9) compiles for: CDNA 1-4, RDNA 1-4 and gfx1250. Measured by
#: compiling a kernel for each with the 3.8 and 3.9 wheels: all compile on 3.8 but gfx940/941 (kept for
#: 3.6/3.7, whose LLVM still had them); 3.9 also refuses RDNA 1-2 (gfx10xx). Those fail with Triton's line.
HIP_ARCHS = (
    "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950",
    "gfx1010", "gfx1011", "gfx1012", "gfx1013", "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035",
    "gfx1036", "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153", "gfx1170",
    "gfx1200", "gfx1201", "gfx1250", "gfx1251",
)  # fmt: skip

_GPU_NAME_SECTION = re.compile(r"--gpu-name\b(.*?)Default value", re.DOTALL)
_SM_NAME = re.compile(r"'(sm_\d+[a-z]?)'")


@functools.lru_cache(maxsize=8)
def _ptxas_gpu_names(path: str, stamp: tuple[int, int]) -> frozenset[str]:
    """The ``sm_*`` values ``ptxas --help`` allows for ``--gpu-name`` (``stamp``: size and mtime, for the cache)."""
    done = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60, check=False)
    section = _GPU_NAME_SECTION.search(done.stdout)
    return frozenset(_SM_NAME.findall(section.group(1) if section else ""))


def _gpu_names(tool: Any) -> frozenset[str]:
    path = tool.path
    st = os.stat(path)
    return _ptxas_gpu_names(path, (st.st_size, st.st_mtime_ns))


def cuda_capabilities() -> list[int] | None:
    """The compute capabilities the installed Triton can compile for, or None when its ``ptxas`` cannot be asked."""
    try:
        import triton
        from triton.backends.nvidia import compiler as nvidia

        get_ptxas = getattr(nvidia, "get_ptxas", None) or (lambda arch: triton.knobs.nvidia.ptxas)
        tools: dict[str, Any] = {}
        for probe in (80, 100):  # Triton 3.7+ runs a second ptxas (ptxas-blackwell) from sm_100 on
            tool = get_ptxas(probe)
            tools[tool.path] = tool
        names = {path: _gpu_names(tool) for path, tool in tools.items()}
        candidates = sorted({int(m.group(1)) for sms in names.values() for s in sms
                             if (m := re.fullmatch(r"sm_(\d+)[a-z]?", s))})
        return [c for c in candidates if nvidia.sm_arch_from_capability(c) in names[get_ptxas(c).path]]
    except Exception:  # no ptxas, an odd wrapper, another Triton layout: Triton's own error is the fallback
        return None


def check_target(target: Target) -> None:
    """Refuse an arch the installed Triton cannot compile for, in one line listing the ones it can."""
    from ..compat import TRITON_VERSION_STR

    if target.is_cuda:
        known = cuda_capabilities()
        if known and target.capability not in known:
            raise UserError(f"--target {target}: Triton {TRITON_VERSION_STR} cannot compile for compute capability "
                            f"{target.arch} (no ptxas it runs accepts it); known: {', '.join(map(str, known))}")
    elif target.is_hip and target.arch not in HIP_ARCHS:
        raise UserError(f"--target {target}: unknown AMD arch {target.arch!r}; known: {', '.join(HIP_ARCHS)}")

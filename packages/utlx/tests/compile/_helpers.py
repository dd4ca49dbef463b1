"""Compile a kernel for a GPU target on the CPU, specialised the way ``kernel[grid]`` would be."""

from __future__ import annotations

import inspect
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TARGETS = {
    "cuda:90": lambda: GPUTarget("cuda", 90, 32),
    "cuda:100": lambda: GPUTarget("cuda", 100, 32),  # compile-verified only: no Blackwell GPU is available
    "hip:gfx942": lambda: GPUTarget("hip", "gfx942", 64),
    "hip:gfx950": lambda: GPUTarget("hip", "gfx950", 64),
}


def compile_kernel(fn: Any, signature: dict[str, str], constexprs: dict[str, Any], target: str = "cuda:90",
                   num_warps: int = 4, ones: tuple[str, ...] = (), unaligned: tuple[str, ...] = (), **options: Any):
    """``triton.compile`` with 16-byte divisibility on every pointer/int argument and the arguments in
    ``ones`` specialised to 1 (what the JIT does for unit strides and aligned tensors). Arguments in
    ``unaligned`` get no divisibility (what the JIT does for an int that is not a multiple of 16). Parameters
    with a default that neither ``signature`` nor ``constexprs`` names take their default (as the JIT binds)."""
    sig = dict(signature)
    consts = dict(constexprs)
    for param in inspect.signature(fn.fn).parameters.values():  # the JIT binds defaults; ASTSource does not
        if param.name not in sig and param.name not in consts and param.default is not param.empty:
            consts[param.name] = param.default
    for name in ones:
        sig[name] = "constexpr"
        consts[name] = 1
    for name in consts:
        sig[name] = "constexpr"
    attrs = {(fn.arg_names.index(n),): [["tt.divisibility", 16]] for n, t in sig.items()
             if t != "constexpr" and n not in unaligned}
    src = ASTSource(fn=fn, signature=sig, constexprs=consts, attrs=attrs)
    return triton.compile(src, target=TARGETS[target](), options={"num_warps": num_warps, **options})


def count(text: str, needle: str) -> int:
    return text.count(needle)


def ptxas_report(ptx: str) -> str:
    """ptxas -v output for the PTX (the flags Triton uses), to read registers, spills and wgmma warnings."""
    from triton.backends.nvidia.compiler import get_ptxas

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        proc = subprocess.run([get_ptxas(90).path, "-v", "--regAllocOptLevel=2", "--gpu-name=sm_90a", str(src),
                               "-o", str(Path(tmp) / "k.cubin")], capture_output=True, text=True, check=True)
    return proc.stderr


def spills(report: str) -> tuple[int, int]:
    """(spill store bytes, spill load bytes) from a :func:`ptxas_report`."""
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    assert m, report
    return int(m.group(1)), int(m.group(2))


def registers(report: str) -> int:
    """Registers per thread from a :func:`ptxas_report`."""
    m = re.search(r"Used (\d+) registers", report)
    assert m, report
    return int(m.group(1))

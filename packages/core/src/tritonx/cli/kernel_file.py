"""Load ``FILE.py:KERNEL`` for the CLI: import the file by path and find its ``@triton.jit`` kernel.

Why by path (importlib) and not by module name: kernels live in scripts that are not on
``sys.path`` and are not packages; the user points at a file, the way ``triton-opt`` takes one.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from ._common import UserError


def split_spec(spec: str) -> tuple[Path, str]:
    """``"path/to/k.py:add_kernel"`` -> ``(Path, "add_kernel")``, naming what is missing."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise UserError(f"expected FILE.py:KERNEL (e.g. kernels.py:add_kernel), got {spec!r}")
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise UserError(f"kernel file {str(path)!r} does not exist (from {spec!r})")
    return path.resolve(), name


def import_file(path: Path) -> Any:
    """Import a Python file as a fresh module (its directory first on ``sys.path`` while it runs)."""
    mod_name = f"_tritonx_cli_{path.stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot import {str(path)!r}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # Triton's JIT reads kernel sources through the module
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(mod_name, None)
        raise UserError(f"importing {str(path)!r} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        try:
            sys.path.remove(str(path.parent))
        except ValueError:
            pass
    return module


def _jit(obj: Any) -> Any | None:
    """The ``JITFunction`` behind a kernel object (unwrapping autotune/heuristics), else None."""
    from triton.runtime.jit import JITFunction

    for _ in range(8):
        if isinstance(obj, JITFunction):
            return obj
        obj = getattr(obj, "fn", None)
        if obj is None:
            return None
    return None


def load_kernel(spec: str) -> Any:
    """The JIT kernel named by ``FILE.py:KERNEL``; the error lists the file's kernels when it is missing."""
    path, name = split_spec(spec)
    module = import_file(path)
    kernels = sorted(n for n, v in vars(module).items() if not n.startswith("__") and _jit(v) is not None)
    obj = getattr(module, name, None)
    if obj is None:
        raise UserError(f"{path.name} has no {name!r}; its @triton.jit kernels: {', '.join(kernels) or 'none'}")
    kernel = _jit(obj)
    if kernel is None:
        raise UserError(f"{path.name}:{name} is a {type(obj).__name__}, not a @triton.jit kernel; "
                        f"kernels in the file: {', '.join(kernels) or 'none'}")
    return kernel


def check_arguments(kernel: Any, signature: dict[str, str], constexprs: dict[str, Any]) -> None:
    """Every given name is a parameter, and every parameter without a default got a type or a value."""
    params = {p.name: p for p in kernel.params}
    name = getattr(kernel, "__name__", "kernel")
    unknown = [n for n in [*signature, *constexprs] if n not in params]
    if unknown:
        raise UserError(f"kernel {name!r} has no parameter(s) {', '.join(map(repr, unknown))}; "
                        f"parameters: {', '.join(params)}")
    missing = [n for n, p in params.items()
               if n not in signature and n not in constexprs and not getattr(p, "has_default", False)]
    if missing:
        what = ["--constexpr " + n + "=..." if params[n].is_constexpr else n + "=TYPE in --signature" for n in missing]
        raise UserError(f"kernel {name!r} needs {', '.join(what)}")


def _alignable(ty: str) -> bool:
    """Pointers and integers carry a divisibility (what Triton specializes on at launch); floats do not."""
    return ty.startswith("*") or re.fullmatch(r"[iu](8|16|32|64)", ty) is not None


def divisibility_attrs(kernel: Any, signature: dict[str, str], specs: list[str] | None,
                       by: int = 16) -> dict[Any, Any] | None:
    """Triton's argument attributes for ``--divisible``: the named parameters (or ``all`` of the pointer and
    integer arguments) marked divisible by ``by``, each one checked by name.

    Why names: the attribute is keyed by the parameter's position among *all* the kernel's parameters,
    constexprs included, so a count or an index (``--divisible 4``) hit constexprs and failed inside Triton
    with ``IndexError``, and could only mark a prefix of the arguments.
    """
    names = [n.strip() for spec in specs or [] for n in spec.split(",") if n.strip()]
    if not names:
        return None
    params = list(kernel.params)
    position = {p.name: i for i, p in enumerate(params)}
    kname = getattr(kernel, "__name__", "kernel")
    alignable = [n for n in position if n in signature and _alignable(signature[n])]
    chosen: list[str] = []
    for name in names:
        if name == "all":
            chosen.extend(alignable)
            continue
        if name.lstrip("-").isdigit():
            raise UserError(f"--divisible takes parameter names, not {name!r} (e.g. --divisible "
                            f"{','.join(alignable[:2]) or 'x_ptr'}, or --divisible all); "
                            f"pointer and integer arguments: {', '.join(alignable) or 'none'}")
        if name not in position:
            raise UserError(f"--divisible {name}: kernel {kname!r} has no parameter {name!r}; "
                            f"pointer and integer arguments: {', '.join(alignable) or 'none'}")
        if name not in signature:
            raise UserError(f"--divisible {name}: {name!r} is a constexpr (a value, not an argument with an "
                            f"alignment); pointer and integer arguments: {', '.join(alignable) or 'none'}")
        if name not in alignable:
            raise UserError(f"--divisible {name}: its type {signature[name]} is neither a pointer nor an integer; "
                            f"pointer and integer arguments: {', '.join(alignable) or 'none'}")
        chosen.append(name)
    return {(position[n],): [["tt.divisibility", by]] for n in dict.fromkeys(chosen)}

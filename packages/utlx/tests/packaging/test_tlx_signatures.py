"""Every name of Meta's ``triton.language.extra.tlx.__all__`` exists in utlx with TLX's signature.

Two references: the ``triton-utlx==3.8.0.post16`` wheel from PyPI (downloaded once into a cache outside the
repo by ``meta_wheel``; the test skips, saying why, when it cannot be had), and Meta's fork at the commit
``fbtriton_checkout`` pins (read from ``$UTLX_FBTRITON_DIR``; skipped when unset). The fork is newer: where
it added parameters (``local_load(layout=, relaxed=)``, ``barrier_arrive(pred=)``, ...), utlx follows it, and
the wheel's check only asks that the wheel's parameters come first, unchanged (so every call written for
the wheel binds the same). Its ``tlx`` package is read with
``ast`` and never imported (it needs Meta's native plugin). Compared per name: parameter names, kinds,
order and defaults of functions and ops, of class constructors and of their public methods; the members of
enums; and which parameters of ``@triton.jit`` helpers are ``tl.constexpr``. TLX's internal plumbing
arguments (``_semantic``, ``_builder``, ``_generator``) and IR-building methods (``to_ir``) are not part of
the surface a kernel sees, so they are left out.
"""

from __future__ import annotations

import ast
import enum
import inspect
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fbtriton_checkout
import meta_wheel
import pytest
import triton
import utlx
from triton.language import core as tl_core
from utlx.language import types as utlx_types

PLUMBING = {"_semantic", "_builder", "_generator", "self", "cls"}
IR_ONLY_METHODS = {"to_ir"}
#: Listed in the wheel's ``__all__`` without a definition anywhere in its ``tlx`` package.
UNDEFINED_IN_WHEEL = {"CLCPipeliner"}
#: Names whose signature in Meta's fork (the pinned commit) has more parameters than in the 3.8.0.post16 wheel;
#: utlx has the fork's, so against the wheel only the leading parameters must match.
EXTENDED_SINCE_WHEEL = {"async_tasks", "tensor_memory_layout_encoding", "local_load", "local_reinterpret",
                        "async_descriptor_load", "barrier_arrive"}
_MISSING = object()


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "positional", "keyword", "*args", "**kwargs"
    default: Any  # _MISSING when none
    constexpr: bool = False


@pytest.fixture(scope="module")
def tlx_root() -> Path:
    root = meta_wheel.meta_wheel_dir()
    if root is None:
        pytest.skip(meta_wheel.unavailable_reason())
    return root / "tlx"


def _default_namespace() -> dict[str, Any]:
    """Names the wheel's default expressions use (``tl.constexpr(1)``, ``tlx.storage_kind.smem``, ...)."""
    tlx_ns = SimpleNamespace(**{n: getattr(utlx, n) for n in dir(utlx) if not n.startswith("__")})
    return {"tl": tl_core, "tlx": tlx_ns, "triton": triton, **vars(utlx_types)}


def _normalize(value: Any) -> Any:
    value = tl_core._unwrap_if_constexpr(value)
    if isinstance(value, list):  # TLX writes empty-sequence defaults as [] (utlx as ()): same contents
        return tuple(value)
    return value


def _wheel_default(node: ast.expr | None) -> Any:
    if node is None:
        return _MISSING
    return _normalize(eval(compile(ast.Expression(node), "<tlx default>", "eval"), _default_namespace()))


def _is_constexpr(annotation: ast.expr | None) -> bool:
    return annotation is not None and ast.unparse(annotation).endswith("constexpr")


def _wheel_params(fn: ast.FunctionDef) -> list[Param]:
    a = fn.args
    out: list[Param] = []
    positional = [*a.posonlyargs, *a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for arg, default in zip(positional, defaults, strict=True):
        out.append(Param(arg.arg, "positional", _wheel_default(default), _is_constexpr(arg.annotation)))
    if a.vararg:
        out.append(Param(a.vararg.arg, "*args", _MISSING))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(Param(arg.arg, "keyword", _wheel_default(default), _is_constexpr(arg.annotation)))
    if a.kwarg:
        out.append(Param(a.kwarg.arg, "**kwargs", _MISSING))
    return [p for p in out if p.name not in PLUMBING]


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


def _utlx_params(fn: Any, constexprs: set[str] = frozenset()) -> list[Param]:
    fn = getattr(fn, "fn", fn) if type(fn).__name__ == "ConstexprFunction" else fn  # @constexpr_function
    out = []
    for p in inspect.signature(fn).parameters.values():
        if p.name in PLUMBING:
            continue
        default = _MISSING if p.default is inspect.Parameter.empty else _normalize(p.default)
        out.append(Param(p.name, _KINDS[p.kind], default, p.name in constexprs))
    return out


def _is_overload(fn: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).endswith("overload") for d in fn.decorator_list)


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any(ast.unparse(d).split("(")[0].endswith("jit") for d in fn.decorator_list)


def _definitions(module: ast.Module) -> dict[str, ast.AST]:
    defs: dict[str, ast.AST] = {}
    for node in module.body:
        if isinstance(node, ast.FunctionDef) and not _is_overload(node):
            defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            defs[node.name] = node
    return defs


def _wheel_exports(root: Path) -> tuple[list[str], dict[str, ast.AST]]:
    """(``__all__``, exported name -> its definition in the wheel's source)."""
    init = ast.parse((root / "__init__.py").read_text())
    names: list[str] = []
    exported: dict[str, ast.AST] = {}
    for node in init.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            names = list(ast.literal_eval(node.value))
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            defs = _definitions(ast.parse((root / f"{node.module.replace('.', '/')}.py").read_text()))
            for alias in node.names:
                if alias.name in defs:
                    exported[alias.asname or alias.name] = defs[alias.name]
    return names, exported


def _class_init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)


def _public_methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
            and n.name not in IR_ONLY_METHODS}


def _is_context_manager(cls: ast.ClassDef) -> bool:
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    return {"__enter__", "__exit__"} <= methods


#: Names whose signature the fork changed incompatibly since the wheel (other defaults, other parameters). They
#: are Blackwell-only (CLC, mxfp8 packing); utlx keeps the wheel's signature.
CHANGED_IN_FORK = {"clc_producer", "clc_consumer", "_to_mxfp8_block"}

_EXTENDING: list[set[str]] = [set()]


def _compare(name: str, wheel: list[Param], ours: list[Param]) -> list[str]:
    if wheel == ours:
        return []
    if name.split(".")[0] in _EXTENDING[0]:
        extra = ours[len(wheel):]
        if ours[:len(wheel)] == wheel and all(p.default is not _MISSING or p.kind in ("*args", "**kwargs")
                                               for p in extra):
            return []
    return [f"{name}: TLX {wheel} != utlx {ours}"]


def _problems(names: list[str], exported: dict[str, ast.AST], extending: set[str] = frozenset()) -> list[str]:
    _EXTENDING[0] = set(extending)
    try:
        return [msg for n in names if n in exported for msg in _check(n, exported[n], getattr(utlx, n))]
    finally:
        _EXTENDING[0] = set()


def _check(name: str, node: ast.AST, obj: Any) -> list[str]:
    if isinstance(node, ast.FunctionDef):
        if _is_jit(node):
            if not isinstance(obj, triton.runtime.JITFunction):
                return [f"{name}: TLX has a @triton.jit function, utlx has {type(obj).__name__}"]
            constexprs = {p.name for p in obj.params if p.is_constexpr}
            return _compare(name, _wheel_params(node), _utlx_params(obj.fn, constexprs))
        if not callable(obj) or isinstance(obj, type):
            return [f"{name}: TLX has a function, utlx has {obj!r}"]
        wheel = [Param(p.name, p.kind, p.default) for p in _wheel_params(node)]  # annotations only matter for jit
        return _compare(name, wheel, _utlx_params(obj))
    assert isinstance(node, ast.ClassDef)
    if _is_context_manager(node) and tl_core.is_builtin(obj):
        # ``with tlx.async_task(...)``: a context-manager class in TLX (its fork's code generator special-cases
        # it); in utlx a builtin returning the context manager, which stock Triton's code generator lowers.
        # The call is what a kernel sees.
        init = _class_init(node)
        wheel = [Param(p.name, p.kind, p.default) for p in _wheel_params(init)] if init else []
        return _compare(name, wheel, _utlx_params(obj))
    if not isinstance(obj, type):
        return [f"{name}: TLX has a class, utlx has {obj!r}"]
    bases = {ast.unparse(b) for b in node.bases}
    if {"enum.Enum", "Enum"} & bases:
        members = [t.id for n in node.body if isinstance(n, ast.Assign) for t in n.targets]
        if not issubclass(obj, enum.Enum) or [m.name for m in obj] != members:
            return [f"{name}: TLX enum members {members}, utlx {obj!r}"]
        return []
    problems: list[str] = []
    init = _class_init(node)
    if init is not None:
        wheel = [Param(p.name, p.kind, p.default) for p in _wheel_params(init)]
        problems += _compare(f"{name}.__init__", wheel, _utlx_params(obj.__init__))
    for method, fn in _public_methods(node).items():
        ours = getattr(obj, method, _MISSING)
        if ours is _MISSING:
            problems.append(f"{name}.{method}: missing in utlx")
        elif isinstance(inspect.getattr_static(obj, method), property):
            continue  # a read-only attribute: existing is the whole contract
        elif callable(ours):
            wheel = [Param(p.name, p.kind, p.default) for p in _wheel_params(fn)]
            problems += _compare(f"{name}.{method}", wheel, _utlx_params(ours))
    return problems


def test_every_tlx_name_exists_with_tlx_signature(tlx_root):
    names, exported = _wheel_exports(tlx_root)
    assert len(names) == 78, f"the reference wheel's tlx.__all__ has {len(names)} names (expected 78: 77 defined)"
    assert {n for n in names if n not in exported} == UNDEFINED_IN_WHEEL
    missing = [n for n in names if not hasattr(utlx, n)]
    assert missing == [], f"names of tlx.__all__ missing in utlx: {missing}"
    problems = _problems(names, exported, EXTENDED_SINCE_WHEEL)
    assert problems == [], "\n".join(problems)


def test_every_name_of_the_pinned_fork_exists_with_its_signature():
    """The fork's TLX (``third_party/tlx/language/tlx`` at the pin): every exported name, exact signatures."""
    root = fbtriton_checkout.language_dir()
    if root is None:
        pytest.skip(fbtriton_checkout.unavailable_reason())
    names, exported = _wheel_exports(root)
    missing = [n for n in names if not hasattr(utlx, n)]
    assert missing == [], f"names of the fork's tlx.__all__ missing in utlx: {missing}"
    problems = _problems([n for n in names if n not in CHANGED_IN_FORK], exported)
    assert problems == [], "\n".join(problems)
    still_changed = {n for n in CHANGED_IN_FORK if _problems([n], exported)}
    assert still_changed == CHANGED_IN_FORK, "a name of CHANGED_IN_FORK matches the fork again: drop it there"


def test_extended_names_really_extend_the_wheel(tlx_root):
    """The leniency above is only for names that gained parameters; the rest stay exact."""
    _, exported = _wheel_exports(tlx_root)
    assert EXTENDED_SINCE_WHEEL <= set(exported)
    changed = {n for n in EXTENDED_SINCE_WHEEL if _problems([n], exported)}
    assert changed == EXTENDED_SINCE_WHEEL


def test_tlx_star_import_gives_every_name(tlx_root):
    names, _ = _wheel_exports(tlx_root)
    namespace: dict[str, Any] = {}
    exec("from triton.language.extra.tlx import *", namespace)
    assert sorted(set(names) - set(namespace)) == []


def test_the_comparison_catches_a_changed_signature():
    """The checker itself: a renamed parameter, a changed default and a lost constexpr are reported."""
    tree = ast.parse("def local_view(local_allocated_buffers, buffer_idx, _semantic=None): pass")
    assert _check("local_view", tree.body[0], utlx.local_view) == []
    renamed = ast.parse("def local_view(bufs, buffer_idx, _semantic=None): pass").body[0]
    assert _check("local_view", renamed, utlx.local_view)
    default = ast.parse("def alloc_barriers(num_barriers, arrive_count=2, _semantic=None): pass").body[0]
    assert _check("alloc_barriers", default, utlx.alloc_barriers)
    jit_src = ("@triton.jit\ndef _to_mxfp8_block(data_input, data_out_tile, scale_out_tile, VEC_SIZE{}, "
               "dtype: tl.constexpr): pass")
    assert _check("_to_mxfp8_block", ast.parse(jit_src.format(": tl.constexpr")).body[0], utlx._to_mxfp8_block) == []
    assert _check("_to_mxfp8_block", ast.parse(jit_src.format("")).body[0], utlx._to_mxfp8_block)


def test_an_unavailable_wheel_skips_with_a_reason(monkeypatch, tmp_path):
    monkeypatch.setenv(meta_wheel.ENV_DIR, str(tmp_path / "nowhere"))
    assert meta_wheel.meta_wheel_dir() is None
    reason = meta_wheel.unavailable_reason()
    assert "triton-utlx==3.8.0.post16" in reason and meta_wheel.ENV_DIR in reason

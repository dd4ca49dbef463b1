"""The code a Python callable can run, as one stable digest (what a Python pass is keyed by).

Why a walk and not the function's own bytecode: a pass that calls ``helpers.scale(...)`` compiles whatever
``helpers.scale`` does *now*. Keying only the pass's own code served the binary an older helper built, silently,
across processes sharing a cache. So the key follows what the pass reaches, over the objects Python has loaded
(what will really run, not what a file on disk says):

* functions: bytecode (nested code objects too), defaults, closure cells, and every global the code names;
* modules named by the code (``helpers.scale``): the module attributes the code names, each walked in turn;
* classes (a callable object's class, a class the code names): every method and immutable class attribute
  along the MRO; an object: its class plus its immutable attributes;
* ``import`` statements inside a function: the module imported (walked when loaded, its file hashed when not).

The walk stops at *libraries*, keyed as a whole instead of object by object: the standard library (by the Python
version), installed distributions (by name, version and the digest of their ``RECORD``, which lists a hash of
every file, so a reinstall of changed code under the same version still changes the key) and tritonx itself (by
a digest of its sources). Editable installs and plain source folders are user code: walked.

What the walk cannot hash is reported, never dropped: mutable state (a dict read as a global, a list in a
closure, an object's mutable attribute) as :attr:`Reach.unseen`, and code it cannot see into (``exec``/``eval``,
``importlib.import_module``, a compiled extension outside any distribution, a walk cut short by its budget) as
:attr:`Reach.opaque`. :mod:`tritonx.integration.unkeyed` turns both into one ``UnkeyedStateWarning`` per pass.
"""

from __future__ import annotations

import dis
import functools
import hashlib
import importlib.metadata as metadata
import importlib.util
import json
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: Objects one walk visits at most; past it the key is partial and the walk says so (opaque).
BUDGET = 20000

_SIMPLE = (int, float, complex, str, bool, bytes, type(None), type(Ellipsis))
#: Names whose use means the code runs something the walk cannot follow.
_DYNAMIC = frozenset({"exec", "eval", "compile", "__import__", "import_module"})


def immutable(value: Any, depth: int = 0) -> bool:
    """Plain values and (nested) tuples/frozensets of them: their repr is their whole meaning."""
    if isinstance(value, _SIMPLE):
        return True
    return isinstance(value, tuple | frozenset) and depth < 4 and all(immutable(v, depth + 1) for v in value)


def _code_names(code: types.CodeType) -> Iterator[tuple[str, str]]:
    """``(opname, name)`` of every global, attribute and import the code (and its nested code) names.

    Imports come out resolved-relative: ``("IMPORT_NAME", ".copy_width")`` for ``from .copy_width import x``
    (one dot per level), so the walk can resolve them against the function's package.
    """
    level = 0
    previous: list[Any] = []
    for ins in dis.get_instructions(code):
        if ins.opname == "IMPORT_NAME":
            level = previous[-2].argval if len(previous) >= 2 and previous[-2].opname == "LOAD_CONST" else 0
            yield ins.opname, "." * int(level or 0) + str(ins.argval)
        elif ins.opname in _NAMED_OPS:
            yield ins.opname, str(ins.argval)
        previous = [*previous[-1:], ins]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)


_NAMED_OPS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_METHOD", "IMPORT_FROM", "LOAD_SUPER_ATTR",
                        "STORE_ATTR"})


def code_digest(code: types.CodeType) -> str:
    """The bytecode of ``code`` and everything nested in it (constants by value, code objects recursively)."""
    consts = []
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            consts.append(code_digest(c))
        elif immutable(c):
            consts.append(repr(c))
        else:
            consts.append(type(c).__qualname__)
    text = "|".join((code.co_code.hex(), repr(code.co_names), repr(code.co_varnames), repr(code.co_freevars),
                     ";".join(consts)))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


# -- libraries -------------------------------------------------------------------------------------------

_lib_lock = threading.Lock()
_lib_keys: dict[str, str | None] = {}
_dist_of_top: dict[str, list[str]] | None = None
_STDLIB = tuple(str(Path(p).resolve()) for p in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]})


def _sources_digest(root: Path) -> str:
    """The Python sources below ``root``, names and contents."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _own_digest() -> str:
    """tritonx's own sources (an editable checkout changes without a version bump)."""
    return _sources_digest(Path(__file__).resolve().parent.parent)


def _editable(dist: metadata.Distribution) -> bool:
    """An editable install's files live in a source tree that changes without a reinstall: walked, not keyed."""
    try:
        info = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return False
    return bool(isinstance(info, dict) and (info.get("dir_info") or {}).get("editable"))


def _distribution_key(top: str) -> str | None:
    """``name==version#record-digest`` of the installed, non-editable distribution providing ``top``."""
    global _dist_of_top
    if _dist_of_top is None:
        _dist_of_top = metadata.packages_distributions()
    for name in _dist_of_top.get(top, ()):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if _editable(dist):
            return None
        record = dist.read_text("RECORD") or ""
        return f"{name}=={dist.version}#{hashlib.sha256(record.encode()).hexdigest()[:16]}"
    return None


def library_key(module_name: str) -> str | None:
    """The key of the library ``module_name`` belongs to, or None for user code (which is walked)."""
    top = (module_name or "").partition(".")[0]
    if not top:
        return None
    with _lib_lock:
        if top in _lib_keys:
            return _lib_keys[top]
    if top in ("builtins", "__main__"):
        key = "python" if top == "builtins" else None
    elif top == "tritonx":
        key = f"tritonx#{_own_digest()}"
    elif top in sys.builtin_module_names or top in getattr(sys, "stdlib_module_names", ()):
        key = f"python-{sys.version.split()[0]}"
    else:
        key = _stdlib_by_path(top) or _distribution_key(top)
    with _lib_lock:
        _lib_keys[top] = key
    return key


def package_key(top: str) -> str:
    """A key of all the code of the importable package ``top``, library or not: :func:`library_key` where it is
    one (an installed distribution: name, version, ``RECORD`` digest), else the digest of its sources (an
    editable checkout or a source folder, which change without a version bump). For keys of caches that store
    what a package's code produced (a plugin's cache tag of another compiler's caches)."""
    key = library_key(top)
    if key is not None:
        return key
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        raise ValueError(f"tritonx.package_key: no importable package {top!r}")
    return f"{top}#{_sources_digest(Path(spec.origin).resolve().parent)}"


def _stdlib_by_path(top: str) -> str | None:
    mod = sys.modules.get(top)
    file = getattr(mod, "__file__", None)
    if not file:
        return None
    resolved = str(Path(file).resolve())
    if any(resolved.startswith(p + "/") for p in _STDLIB) and "site-packages" not in resolved:
        return f"python-{sys.version.split()[0]}"
    return None


def _module_of(obj: Any) -> str:
    mod = getattr(obj, "__module__", None)
    return mod if isinstance(mod, str) else ""


# -- the walk --------------------------------------------------------------------------------------------


class Reach:
    """One walk over what a callable can run: :meth:`key` is its digest; ``unseen``/``opaque`` what it missed."""

    def __init__(self, budget: int = BUDGET, declared: Callable[[Any], str | None] | None = None) -> None:
        self._budget = budget
        self._declared = declared
        self._visited = 0
        self._labels: dict[int, str] = {}
        self._drilled: set[tuple[int, str]] = set()
        self._keep: list[Any] = []  # walked objects stay alive, so their ids stay unique during the walk
        self._root: Any = None
        self.unseen: list[str] = []
        self.opaque: list[str] = []
        self._cut = False

    def key(self, fn: Any) -> str:
        """Digest of everything ``fn`` can run (a declared ``cache_key()`` is the caller's business)."""
        self._root = getattr(fn, "__func__", fn)
        return hashlib.sha256(self.value(fn, "").encode()).hexdigest()

    # -- values ------------------------------------------------------------------------------------------

    def value(self, value: Any, where: str, names: frozenset[str] = frozenset()) -> str:
        """The key text of a value the callable reaches; ``where`` says how (reports quote it)."""
        if isinstance(value, _SIMPLE):
            return repr(value)
        if isinstance(value, tuple | frozenset):
            items = sorted(value, key=repr) if isinstance(value, frozenset) else value
            return "(" + ",".join(self.value(v, where, names) for v in items) + ")"
        if isinstance(value, types.ModuleType):  # drilled per name: two callers may read different attributes
            return self._module(value, names)
        label = self._labels.get(id(value))
        if label is not None:
            return label
        if self._visited >= self._budget:
            if not self._cut:
                self._cut = True
                self.opaque.append(f"more than {self._budget} objects (the key covers the first {self._budget})")
            return "<cut>"
        self._visited += 1
        self._labels[id(value)] = f"<ref {_name_of(value)}>"
        self._keep.append(value)
        return self._dispatch(value, where, names)

    def _dispatch(self, value: Any, where: str, names: frozenset[str]) -> str:
        if self._declared is not None and callable(value) and not isinstance(value, type):
            stated = self._declared(value)  # a reached callable that states its own key (the protocol)
            if stated is not None:
                return stated
        if isinstance(value, type):
            return self._class(value)
        if isinstance(value, types.FunctionType):
            return self._function(value)
        if isinstance(value, types.MethodType):
            return "method(" + self.value(value.__func__, where) + "," + self.value(value.__self__, where) + ")"
        if isinstance(value, staticmethod | classmethod):
            return type(value).__name__ + "(" + self.value(value.__func__, where) + ")"
        if isinstance(value, property):
            return "property(" + ",".join(self.value(f, where) for f in (value.fget, value.fset, value.fdel)) + ")"
        if isinstance(value, functools.partial):
            return ("partial(" + self.value(value.func, where) + "," + self.value(value.args, where) + ","
                    + self.value(tuple(sorted(value.keywords.items())), where) + ")")
        if isinstance(value, _BUILTINS):
            return self._builtin(value)
        if isinstance(value, dict | list | set | bytearray):
            self.unseen.append(f"{where or 'a value'} ({type(value).__name__})")
            return type(value).__name__
        return self._instance(value, where)

    # -- kinds ---------------------------------------------------------------------------------------------

    def _builtin(self, fn: Any) -> str:
        owner = getattr(fn, "__self__", None)
        mod = _module_of(fn) or (owner.__name__ if isinstance(owner, types.ModuleType) else "")
        if not mod and owner is not None and not isinstance(owner, types.ModuleType):
            mod = type(owner).__module__
        lib = library_key(mod) if mod else "python"
        name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "?")
        if lib is None:
            self.opaque.append(f"compiled function {mod}.{name} (not part of an installed distribution)")
            return f"builtin:{mod}.{name}:opaque"
        return f"builtin:{mod}.{name}@{lib}"

    def _module(self, mod: types.ModuleType, names: frozenset[str]) -> str:
        lib = library_key(mod.__name__)
        if lib is not None:
            return f"module:{mod.__name__}@{lib}"
        file = str(getattr(mod, "__file__", "") or "")
        if file and not file.endswith((".py", ".pyc")) and (id(mod), "") not in self._drilled:
            self._drilled.add((id(mod), ""))
            self.opaque.append(f"compiled module {mod.__name__} (not part of an installed distribution)")
        attrs = vars(mod)
        parts = []
        for name in sorted(names):
            if name not in attrs or name.startswith("__"):
                continue
            if (id(mod), name) in self._drilled:
                parts.append(f"{name}=<ref>")
                continue
            self._drilled.add((id(mod), name))
            parts.append(f"{name}=" + self.value(attrs[name], f"global {name!r} of module {mod.__name__}", names))
        return f"module:{mod.__name__}{{" + ",".join(parts) + "}"

    def _class(self, cls: type) -> str:
        lib = library_key(_module_of(cls))
        if lib is not None:
            return f"class:{_module_of(cls)}.{cls.__qualname__}@{lib}"
        parts = [f"class:{_module_of(cls)}.{cls.__qualname__}"]
        for klass in cls.__mro__:
            if klass is object:
                continue
            base_lib = library_key(_module_of(klass))
            if base_lib is not None:
                parts.append(f"base:{_module_of(klass)}.{klass.__qualname__}@{base_lib}")
                continue
            for name, attr in sorted(vars(klass).items(), key=lambda kv: kv[0]):
                if name in _CLASS_BOOKKEEPING:
                    continue
                at = f"class attribute {klass.__qualname__}.{name}"
                parts.append(f"{name}=" + (repr(attr) if immutable(attr) else self.value(attr, at)))
        return "{" + ",".join(parts) + "}"

    def _instance(self, obj: Any, where: str) -> str:
        cls = type(obj)
        wrapped = getattr(obj, "__wrapped__", None)
        if wrapped is not None and callable(wrapped):  # functools.lru_cache, functools.wraps-style wrappers
            return "wrapped(" + self.value(cls, where) + "," + self.value(wrapped, where) + ")"
        if library_key(_module_of(cls)) is not None:
            # an object of a library class (a dtype, an enum member, a logger): what code sees of it is its repr
            if cls.__hash__ is None:
                self.unseen.append(f"{where or 'a value'} ({cls.__name__})")
                return f"obj:{_module_of(cls)}.{cls.__qualname__}"
            text = repr(obj)
            if " at 0x" in text:
                text = f"<{cls.__qualname__} object>"
            return f"obj:{hashlib.sha256(text.encode()).hexdigest()[:16]}:" + self.value(cls, where)
        parts = [self.value(cls, where)]
        state = getattr(obj, "__dict__", None)
        if not callable(obj) and not _frozen(obj) and isinstance(state, dict):
            self.unseen.append(f"{where or 'a value'} ({cls.__name__})")
        if isinstance(state, dict):
            for name, attr in sorted(state.items(), key=lambda kv: kv[0]):
                parts.append(f"{name}=" + (repr(attr) if immutable(attr) else self.value(attr, f"attribute {name!r}")))
        return "obj{" + ",".join(parts) + "}"

    def _function(self, func: types.FunctionType) -> str:
        mod = _module_of(func)
        lib = library_key(mod) or _stdlib_code(func.__code__)
        if lib is not None:
            wrapped = getattr(func, "__wrapped__", None)  # reprlib/functools wrappers around user code
            inner = "" if wrapped is None else "(" + self.value(wrapped, f"what {func.__qualname__} wraps") + ")"
            return f"fn:{mod}.{func.__qualname__}@{lib}{inner}"
        of = "" if func is self._root else f" of {mod}.{func.__qualname__}"
        code = func.__code__
        names = sorted(set(_code_names(code)))
        all_names = frozenset(n for _, n in names)
        parts = [f"fn:{mod}.{func.__qualname__}", code_digest(code),
                 self.value(func.__defaults__ or (), f"a default{of}"),
                 self.value(tuple(sorted((func.__kwdefaults__ or {}).items())), f"a keyword default{of}")]
        for name, cell in zip(code.co_freevars, func.__closure__ or (), strict=False):
            try:
                content = cell.cell_contents
            except ValueError:
                parts.append(f"{name}=<empty>")
                continue
            parts.append(f"{name}=" + self.value(content, f"closure variable {name!r}{of}", all_names))
        g = func.__globals__
        builtins = g.get("__builtins__")
        builtins = builtins if isinstance(builtins, dict) else vars(builtins) if builtins is not None else {}
        for op, name in names:
            if name in _DYNAMIC and op != "STORE_ATTR":
                self.opaque.append(f"{mod}.{func.__qualname__} calls {name}() (what that runs cannot be followed)")
            if op in ("LOAD_GLOBAL", "LOAD_NAME"):
                if name in g:
                    parts.append(f"g:{name}=" + self.value(g[name], f"global {name!r}{of}", all_names))
                elif name not in builtins:
                    parts.append(f"g:{name}=<unbound>")
            elif op == "IMPORT_NAME":
                parts.append(f"import:{name}=" + self._imported(_absolute(name, g), all_names))
        return "{" + ",".join(parts) + "}"

    def _imported(self, name: str, names: frozenset[str]) -> str:
        """A module imported inside a function: walked if loaded, else keyed by its file (or its library)."""
        lib = library_key(name)
        if lib is not None:
            return f"{name}@{lib}"
        mod = sys.modules.get(name)
        if mod is not None:
            return self.value(mod, f"module {name}", names)
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
        if origin and Path(origin).is_file():
            return f"file:{hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:24]}"
        self.opaque.append(f"module {name} (imported inside a pass, and not found now)")
        return f"{name}:missing"


_BUILTINS = (types.BuiltinFunctionType, types.BuiltinMethodType, types.WrapperDescriptorType,
             types.MethodDescriptorType, types.MethodWrapperType, types.ClassMethodDescriptorType,
             types.GetSetDescriptorType, types.MemberDescriptorType)
_CLASS_BOOKKEEPING = frozenset({
    "__dict__", "__weakref__", "__module__", "__doc__", "__qualname__", "__slots__", "__annotations__",
    "__dataclass_fields__", "__dataclass_params__", "__match_args__", "__parameters__", "__orig_bases__",
    "__abstractmethods__", "_abc_impl", "__firstlineno__", "__static_attributes__", "__hash__",
})


def _absolute(name: str, globals_: dict[str, Any]) -> str:
    """``name`` as ``_code_names`` spells it (leading dots for a relative import), made absolute."""
    if not name.startswith("."):
        return name
    try:
        return importlib.util.resolve_name(name, globals_.get("__package__") or "")
    except (ImportError, ValueError):
        return name.lstrip(".")


def _stdlib_code(code: types.CodeType) -> str | None:
    """Functions generated by the standard library for user classes (a dataclass ``__repr__`` wrapper)."""
    file = code.co_filename
    if file.startswith("<") or "site-packages" in file:
        return None
    resolved = str(Path(file).resolve()) if file else ""
    return f"python-{sys.version.split()[0]}" if any(resolved.startswith(p + "/") for p in _STDLIB) else None


def _name_of(value: Any) -> str:
    qual = getattr(value, "__qualname__", None)
    if isinstance(qual, str):
        return f"{_module_of(value)}.{qual}"
    return f"{type(value).__module__}.{type(value).__qualname__} object"


def _frozen(obj: Any) -> bool:
    params = getattr(type(obj), "__dataclass_params__", None)
    return bool(getattr(params, "frozen", False))


def reach(fn: Any) -> tuple[str, Reach]:
    """Walk ``fn`` once: its digest, and the :class:`Reach` that says what the digest could not see."""
    r = Reach()
    return r.key(fn), r

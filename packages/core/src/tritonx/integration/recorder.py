"""Record a stock stage's pass-adder calls while it runs, without patching Triton globally.

A backend stage (``make_ttgir`` ...) builds ``pm = ir.pass_manager(ctx)``, calls adders
``passes.<group>.add_<name>(pm, *args)`` (and ``nvidia.passes...``/``amd.passes...``) and then
``pm.run(mod, label)``. We run a *copy* of the stage function whose globals see proxies for ``ir``,
``passes`` and the vendor module: adders called with a :class:`RecordingPassManager` are recorded, and
its ``run`` hands the recorded list to the session, which runs the edited list on real pass managers.
Nothing outside the copied stage sees a proxy, so other threads and libraries are unaffected.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any, Protocol


class RunSink(Protocol):
    def run(self, pm: RecordingPassManager, mod: Any, rest: tuple[Any, ...]) -> None: ...


class RecordingPassManager:
    """Stands in for ``ir.pass_manager`` inside a stage: records, and runs the edited list on ``run``."""

    def __init__(self, real_ir: Any, context: Any, sink: RunSink) -> None:
        self._real_ir = real_ir
        self.context = context
        self._sink = sink
        self.calls: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = []
        self.setup: list[str] = []

    def new_real(self) -> Any:
        """A real pass manager configured like this one (``enable_debug`` replayed)."""
        pm = self._real_ir.pass_manager(self.context)
        for method in self.setup:
            getattr(pm, method)()
        return pm

    def record(self, adder: str, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.calls.append((adder, fn, args))

    def enable_debug(self) -> Any:
        self.setup.append("enable_debug")
        return self._real_ir.pass_manager(self.context).enable_debug()

    def get_pipeline_str(self) -> str:
        pm = self.new_real()
        for _, fn, args in self.calls:
            fn(pm, *args)
        return pm.get_pipeline_str()

    def run(self, mod: Any, *rest: Any) -> None:
        self._sink.run(self, mod, rest)


class _ModuleProxy:
    """Proxy of a pybind submodule (``passes``, ``nvidia``...) whose ``add_*`` functions record."""

    def __init__(self, real: Any, path: str) -> None:
        self._real = real
        self._path = path
        self._cache: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self._cache[name]
        except KeyError:
            pass
        attr = getattr(self._real, name)
        if isinstance(attr, types.ModuleType):
            value: Any = _ModuleProxy(attr, f"{self._path}.{name}")
        elif name.startswith("add_") and callable(attr):
            value = _recording_adder(f"{self._path}.{name}", attr)
        else:
            return attr
        self._cache[name] = value
        return value


def _recording_adder(path: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def adder(pm: Any, *args: Any) -> Any:
        if isinstance(pm, RecordingPassManager):
            pm.record(path, real, args)
            return None
        return real(pm, *args)

    adder.__name__ = real.__name__ if hasattr(real, "__name__") else path.rsplit(".", 1)[-1]
    return adder


class _IrProxy:
    """Proxy of ``ir`` whose ``pass_manager(ctx)`` returns a recording pass manager."""

    def __init__(self, real: Any, sink: RunSink) -> None:
        self._real = real
        self._sink = sink

    def pass_manager(self, context: Any) -> RecordingPassManager:
        return RecordingPassManager(self._real, context, self._sink)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


_stateless: dict[int, _ModuleProxy] = {}


def _module_proxy(module: Any, path: str) -> _ModuleProxy:
    proxy = _stateless.get(id(module))
    if proxy is None:
        proxy = _stateless[id(module)] = _ModuleProxy(module, path)
    return proxy


def proxied_globals(module_globals: dict[str, Any], sink: RunSink) -> dict[str, Any]:
    """A copy of a backend module's globals where ``ir``/``passes``/vendor modules are proxies.

    Module-level functions of that module are re-created over the new globals too, so helpers a
    stage calls to add passes are recorded as well.
    """
    from ..compat import libtriton

    lib = libtriton()
    g = dict(module_globals)
    for name, value in module_globals.items():
        if value is lib.ir:
            g[name] = _IrProxy(value, sink)
        elif value is lib.passes:
            g[name] = _module_proxy(value, "passes")
        elif isinstance(value, types.ModuleType) and value.__name__.startswith(lib.__name__ + "."):
            if hasattr(value, "passes"):
                g[name] = _module_proxy(value, value.__name__.rsplit(".", 1)[-1])
    for name, value in module_globals.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is module_globals:
            g[name] = _rebind(value, g)
    return g


def _rebind(fn: types.FunctionType, g: dict[str, Any]) -> types.FunctionType:
    new = types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    return new


class _BackendView:
    """The backend object as a stage copy sees it: its methods run over the proxied globals."""

    def __init__(self, backend: Any, g: dict[str, Any]) -> None:
        self._backend = backend
        self._g = g

    def __getattr__(self, name: str) -> Any:
        try:
            static = inspect.getattr_static(type(self._backend), name)
        except AttributeError:
            return getattr(self._backend, name)
        if isinstance(static, staticmethod):
            return _rebind(static.__func__, self._g)
        if isinstance(static, types.FunctionType) and static.__globals__ is self._backend_globals():
            return types.MethodType(_rebind(static, self._g), self)
        return getattr(self._backend, name)

    def _backend_globals(self) -> dict[str, Any]:
        return inspect.getmodule(type(self._backend)).__dict__


def recording_stage(stage_fn: Callable[..., Any], backend: Any, sink: RunSink) -> Callable[..., Any] | None:
    """A copy of a stage callable whose pass managers record into ``sink``; None if not possible.

    Stock stages are lambdas closing over ``self`` (the backend), options and capability.
    """
    code = getattr(stage_fn, "__code__", None)
    if code is None:
        return None
    module = inspect.getmodule(type(backend))
    if module is None:
        return None
    g = proxied_globals(module.__dict__, sink)
    view = _BackendView(backend, g)
    closure = stage_fn.__closure__ or ()
    cells = []
    found_self = False
    for name, cell in zip(code.co_freevars, closure, strict=True):
        if name == "self":
            try:
                contents = cell.cell_contents
            except ValueError:
                contents = None
            if contents is backend:
                cells.append(types.CellType(view))
                found_self = True
                continue
        cells.append(cell)
    if not found_self:
        return None
    new = types.FunctionType(code, g, getattr(stage_fn, "__name__", "stage"), stage_fn.__defaults__, tuple(cells))
    return new

"""``import triton.language.extra.tlx`` gives utlx, as a package with the submodules of Meta's ``tlx``.

Each test runs a fresh interpreter, as a user's process would: the alias must work from the ``.pth`` alone
(no ``import utlx`` first), every submodule of Meta's package must import as it does there, a real
``triton.language.extra.tlx`` (Meta's fork) must win over the alias, and a stale copy of the ``.pth``'s
module (an editable install copies it into site-packages once) must still give the submodules.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import meta_wheel
import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
CORE_SRC = Path(__file__).resolve().parents[3] / "core" / "src"

ENV = {"UTLX_DISABLE": "1", "PATH": "/usr/bin:/bin"}


def _run(code: str, site_dir: Path | None = None, alias_module: str | None = None) -> str:
    """Run ``code`` in a fresh interpreter whose only processed site dir holds utlx's ``.pth`` (and
    ``alias_module`` as ``utlx_tlx_alias``, else the repo's); returns stdout, failing with stderr.

    ``-S``: the ``.pth`` files of this environment's site-packages are not processed (an installed copy of
    the alias module there would otherwise be the one in use); its packages are still importable.
    """
    packages = [p for p in sys.path if p.endswith("site-packages")]
    prelude = f"import site, sys; sys.path[:0] = [{str(SRC)!r}, {str(CORE_SRC)!r}]; sys.path += {packages!r};"
    if site_dir is not None:
        (site_dir / "utlx-tlx-alias.pth").write_text((SRC / "utlx-tlx-alias.pth").read_text())
        if alias_module is not None:  # the stale copy comes first, as site-packages precedes an editable src dir
            (site_dir / "utlx_tlx_alias.py").write_text(alias_module)
            prelude += f"sys.path.insert(0, {str(site_dir)!r});"
        prelude += (f"site.addsitedir({str(site_dir)!r});"
                    "assert 'utlx' not in sys.modules and 'triton' not in sys.modules;")
    done = subprocess.run([sys.executable, "-S", "-c", prelude + textwrap.dedent(code)], capture_output=True,
                          text=True, env=ENV, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_alias_works_from_the_pth_at_startup(tmp_path):
    out = _run("""
        import triton.language.extra.tlx as tlx, utlx
        assert tlx is utlx and callable(tlx.local_alloc)
        assert utlx.__spec__.name == "utlx"  # the alias did not take over utlx's own spec
        print('ok')
    """, site_dir=tmp_path)
    assert out.endswith("ok")


def test_submodules_import_as_from_meta_package(tmp_path):
    out = _run("""
        import json, sys
        from triton.language.extra.tlx.barrier import alloc_barriers
        from triton.language.extra.tlx.mem_ops import local_alloc, storage_alias_spec
        from triton.language.extra.tlx.types import buffered_tensor, storage_kind
        from triton.language.extra.tlx.async_task_utils import async_task, async_tasks
        from triton.language.extra.tlx.warp_spec import get_bufidx_phase
        from triton.language.extra.tlx.mxfp8_utils import _to_mxfp8_block
        import triton.language.extra.tlx.compiler.common.lowering as lowering
        import triton.language.extra.tlx as tlx, utlx
        report = {
            "same_op": alloc_barriers is utlx.alloc_barriers and local_alloc is utlx.local_alloc,
            "same_module": tlx.barrier is sys.modules["utlx.language.barrier"],
            "own_spec": sys.modules["utlx.language.barrier"].__spec__.name,
            "compiler": lowering is sys.modules["utlx.compiler.common.lowering"],
            "loaded_once": "triton.language.extra.tlx.compiler.common.lowering" in sys.modules
                           and sys.modules["triton.language.extra.tlx.compiler.common.lowering"] is lowering,
            "types": buffered_tensor is utlx.buffered_tensor and storage_kind is utlx.storage_kind,
        }
        try:
            import triton.language.extra.tlx.no_such_module
        except ModuleNotFoundError as exc:
            report["missing"] = exc.name
        print(json.dumps(report))
    """, site_dir=tmp_path)
    assert json.loads(out.splitlines()[-1]) == {
        "same_op": True, "same_module": True, "own_spec": "utlx.language.barrier", "compiler": True,
        "loaded_once": True, "types": True, "missing": "triton.language.extra.tlx.no_such_module",
    }


def test_every_module_of_meta_package_exists(tmp_path):
    root = meta_wheel.meta_wheel_dir()
    if root is None:
        pytest.skip(meta_wheel.unavailable_reason())
    tlx_dir = root / "tlx"
    names = sorted({p.stem for p in tlx_dir.glob("*.py") if p.stem != "__init__"}
                   | {p.parent.name for p in tlx_dir.glob("*/__init__.py") if p.parent.name != "tutorials"})
    assert "compiler" in names and "warp_ops" in names  # what the wheel ships (tutorials: the test harness's)
    out = _run(f"""
        import importlib
        missing = []
        for name in {names!r} + ["warp_spec"]:
            try:
                importlib.import_module("triton.language.extra.tlx." + name)
            except ImportError as exc:
                missing.append((name, str(exc)))
        print(missing)
    """, site_dir=tmp_path)
    assert out.splitlines()[-1] == "[]"


def test_a_real_module_keeps_its_own_submodules():
    out = _run("""
        import importlib.abc, importlib.machinery, sys, types

        class Real(importlib.abc.MetaPathFinder, importlib.abc.Loader):
            def find_spec(self, name, path=None, target=None):
                if name in ("triton.language.extra.tlx", "triton.language.extra.tlx.barrier"):
                    return importlib.machinery.ModuleSpec(name, self, is_package=name.endswith("tlx"))
            def create_module(self, spec):
                return types.ModuleType(spec.name)
            def exec_module(self, module):
                module.REAL = True

        import utlx  # installs the alias and the submodule finder first
        sys.meta_path.append(Real())  # behind utlx's finders, as a fork's own modules would be found anyway
        sys.meta_path.insert(1, sys.meta_path.pop())
        import triton.language.extra.tlx as tlx
        import triton.language.extra.tlx.barrier as barrier
        print(tlx is utlx, getattr(tlx, "REAL", False), getattr(barrier, "REAL", False))
    """)
    assert out.splitlines()[-1] == "False True True"


_STALE_SHIM = textwrap.dedent('''
    """An older utlx_tlx_alias (top-level alias only), as an editable install may have copied it."""
    import importlib, importlib.abc, importlib.machinery, sys

    class _Loader(importlib.abc.Loader):
        def create_module(self, spec):
            return importlib.import_module("utlx")
        def exec_module(self, module):
            pass

    class TlxAliasFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname == "triton.language.extra.tlx":
                return importlib.machinery.ModuleSpec(fullname, _Loader())

    ALIAS, TARGET = "triton.language.extra.tlx", "utlx"

    def install():
        if not any(isinstance(f, TlxAliasFinder) for f in sys.meta_path):
            sys.meta_path.append(TlxAliasFinder())
''')


def test_a_stale_alias_module_still_gets_the_submodules(tmp_path):
    out = _run("""
        import utlx_tlx_alias
        assert "older" in utlx_tlx_alias.__doc__  # the stale copy is the one in use
        from triton.language.extra.tlx.warp_spec import get_bufidx_phase
        from triton.language.extra.tlx.barrier import alloc_barriers
        import utlx
        print(alloc_barriers is utlx.alloc_barriers)
    """, site_dir=tmp_path, alias_module=_STALE_SHIM)
    assert out.splitlines()[-1] == "True"


def test_a_utlx_module_outside_meta_package_is_not_loaded_again_under_the_alias(tmp_path):
    """torch 2.14 probes ``triton.language.extra.tlx.inductor.registry`` (Meta's TorchTLX) while Inductor
    imports. utlx has an ``inductor`` package that is not Meta's: the probe must fail as on stock Triton
    (ImportError, which torch catches), not run utlx/inductor/__init__.py a second time under the alias name:
    that made a second module object whose ``stats`` and mode split from ``utlx.inductor``'s, and bound it as
    ``utlx.inductor`` (so ``import utlx.inductor as ui`` got the copy)."""
    out = _run("""
        import importlib, sys
        import triton.language.extra.tlx as tlx
        for name in ("triton.language.extra.tlx.inductor", "triton.language.extra.tlx.inductor.registry"):
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as e:
                assert "utlx.inductor is not one" in str(e), e
            else:
                raise AssertionError(name + " imported")
        assert "triton.language.extra.tlx.inductor" not in sys.modules
        import utlx.inductor as ui
        assert ui is sys.modules["utlx.inductor"] and ui.__name__ == "utlx.inductor"
        print("ok")
    """, site_dir=tmp_path)
    assert out.endswith("ok")

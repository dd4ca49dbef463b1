"""Install tritonx-core and utlx from built wheels into a fresh venv and use them as a user would.

Why: a release is only done when the artifacts work on their own, away from the checkout: the
wheels declare every dependency (utlx once forgot numpy), the plugin loads, the alias imports, the
CLI pipes, a kernel compiles for a GPU target on the CPU, and (``--template``) a scaffolded plugin
installs without downgrading anything and passes its own tests and matrix cell.

1. A wheelhouse: the given wheels plus everything they declare, fetched by ``pip download``. Triton
   is pinned; torch comes only from a local CPU wheel (pip's configured ``find-links``), never from an
   index, where ``torch`` is the multi-GB CUDA build.
2. A fresh venv and ``pip install --no-index --find-links WHEELHOUSE triton==V [torch==T] tritonx-core
   utlx``: only what the wheels declare can be there, so a missing dependency fails.
3. The checks, each a command run from a scratch directory outside the repository, with PYTHONPATH and
   every ``TRITONX_*``/``UTLX_*`` variable removed.

    python tools/release/smoke.py --wheels DIR             # core checks (+ torch when a local CPU wheel exists)
    python tools/release/smoke.py --wheels DIR --template  # + tritonx new, pip install .[test], tests, matrix
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TRITON = "3.8.0"
DEFAULT_TORCH = "2.13.0"
#: What the template checks install besides the wheels' own dependencies (test extra, build backend).
TEMPLATE_EXTRAS = ("pytest>=8", "hatchling>=1.27", "cookiecutter>=2.6")
_DROP_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TRITON_INTERPRET", "TRITON_CACHE_DIR")

ADD_KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
''')

#: A TLX kernel compiled for cuda:90 on the CPU through the documented Python route, with the
#: ``triton.language.extra.tlx`` alias and no ``import utlx`` anywhere in user code.
TLX_COMPILE = textwrap.dedent('''
    import re
    import sys

    assert "utlx" not in sys.modules
    import triton
    import triton.language as tl
    import triton.language.extra.tlx as tlx
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    assert tlx.__name__ == "utlx", tlx


    @triton.jit
    def staged_copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        buf = tlx.local_view(tlx.local_alloc((BLOCK,), tl.float32, 1), 0)
        tlx.local_store(buf, tl.load(x_ptr + offs))
        tl.store(y_ptr + offs, tlx.local_load(buf) * 2.0)


    src = ASTSource(fn=staged_copy, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"},
                    constexprs={"BLOCK": 256})
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    assert "ttg.local_alloc" in k.asm["ttgir"], k.asm["ttgir"]
    # the staged copy goes through shared memory: st.shared/stmatrix then ld.shared/ldmatrix
    assert re.search(r"\\bst(\\.shared|matrix\\S*\\.shared)", k.asm["ptx"]), k.asm["ptx"]
    assert re.search(r"\\bld(\\.shared|matrix\\S*\\.shared)", k.asm["ptx"]), k.asm["ptx"]
    print("tlx kernel compiled for cuda:90:", len(k.asm["cubin"]), "bytes of cubin; utlx from", tlx.__file__)
''')

TORCH_OP = textwrap.dedent('''
    import torch
    import utlx.torch_ops
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(64, 32, dtype=torch.float16, device="cuda")
        b = torch.empty(32, 48, dtype=torch.float16, device="cuda")
        c = torch.ops.utlx.matmul(a, b)
    assert tuple(c.shape) == (64, 48) and c.dtype == torch.float16, c
    print("torch.ops.utlx.matmul:", torch.__version__, tuple(c.shape))
''')


class SmokeError(RuntimeError):
    """The smoke could not be set up (no wheels, a download or an install failed)."""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


@dataclass
class Venv:
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / ("Scripts" if os.name == "nt" else "bin")

    @property
    def python(self) -> str:
        return str(self.bin / ("python.exe" if os.name == "nt" else "python"))


@dataclass
class Smoke:
    """One smoke run: its wheelhouse, venv and scratch directory, and the checks' verdicts."""

    workdir: Path
    triton: str = DEFAULT_TRITON
    torch: str | None = DEFAULT_TORCH
    checks: list[Check] = field(default_factory=list)
    log: Callable[[str], None] = print

    @property
    def wheelhouse(self) -> Path:
        return self.workdir / "wheelhouse"

    @property
    def scratch(self) -> Path:
        return self.workdir / "scratch"

    def env(self, venv: Venv) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in _DROP_ENV and not k.startswith(("TRITONX_", "UTLX_"))}
        env["PATH"] = os.pathsep.join([str(venv.bin), env.get("PATH", "")])
        env["TRITON_CACHE_DIR"] = str(self.workdir / "triton-cache")
        return env

    # -- set-up --------------------------------------------------------------------------------

    def make_wheelhouse(self, wheels: Sequence[Path], extras: Sequence[str] = ()) -> None:
        """Copy ``wheels`` and download everything they declare (plus Triton, torch, ``extras``)."""
        self.wheelhouse.mkdir(parents=True, exist_ok=True)
        for w in wheels:
            shutil.copy2(w, self.wheelhouse / w.name)
        wanted = [str(self.wheelhouse / w.name) for w in wheels] + [f"triton=={self.triton}", *extras]
        if self.torch:
            torch_wheel = self._local_torch()
            if torch_wheel is None:
                self.log(f"torch {self.torch}: no local CPU wheel in pip's find-links; torch checks are skipped")
                self.torch = None
            else:
                wanted.append(str(torch_wheel))
        _pip([sys.executable, "-m", "pip", "download", "-q", "-d", str(self.wheelhouse), *wanted],
             "filling the wheelhouse")

    def _local_torch(self) -> Path | None:
        """The CPU torch wheel from pip's configured find-links (``--no-index``: never PyPI's CUDA build)."""
        probe = self.workdir / "torch-probe"
        done = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-index",
                               "-d", str(probe), f"torch=={self.torch}"], capture_output=True, text=True)
        found = sorted(probe.glob("torch-*.whl")) if done.returncode == 0 else []
        if not found or "+cpu" not in found[0].name:
            return None
        target = self.wheelhouse / found[0].name
        shutil.move(str(found[0]), target)
        return target

    def create_venv(self, name: str = "venv") -> Venv:
        venv = Venv(self.workdir / name)
        _pip([sys.executable, "-m", "venv", "--clear", str(venv.root)], "creating the venv")
        return venv

    def install(self, venv: Venv, *requirements: str) -> None:
        """``pip install --no-index --find-links WHEELHOUSE``: nothing outside the wheelhouse can come in."""
        _pip([venv.python, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(self.wheelhouse),
              *requirements], f"installing {' '.join(requirements)}")

    def install_user_packages(self, venv: Venv, *, template: bool = False) -> None:
        core = "tritonx-core[new]" if template else "tritonx-core"  # `tritonx new` needs the extra
        reqs = [f"triton=={self.triton}", *([f"torch=={self.torch}"] if self.torch else []), core, "utlx"]
        self.install(venv, *reqs)

    # -- checks --------------------------------------------------------------------------------

    def run(self, venv: Venv, name: str, cmd: Sequence[str], ok: Callable[[subprocess.CompletedProcess], bool],
            *, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        """Run one check from the scratch directory; record and log its verdict."""
        cwd = cwd or self.scratch
        cwd.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(list(cmd), cwd=cwd, env=self.env(venv), capture_output=True, text=True,
                              timeout=timeout, check=False)
        passed = bool(ok(done))
        out = (done.stdout + done.stderr).strip()
        detail = out.splitlines()[-1][:200] if passed and out else out[-3000:]
        self.checks.append(Check(name, passed, f"exit {done.returncode}: {detail}" if not passed else detail))
        self.log(f"{'ok  ' if passed else 'FAIL'} {name}" + ("" if passed else f"\n{textwrap.indent(detail, '    ')}"))
        return done

    def core_checks(self, venv: Venv) -> None:
        """The CLI, the plugin, the alias, a pipe and compiles for cuda:90, all from outside the repository."""
        py, tritonx = venv.python, str(venv.bin / "tritonx")
        root = str(ROOT)
        self.run(venv, "installed from the wheels, not the checkout",
                 [py, "-c", "import tritonx, utlx; print(tritonx.__file__, utlx.__file__)"],
                 lambda d: d.returncode == 0 and root not in d.stdout and str(venv.root) in d.stdout)
        self.run(venv, "tritonx --version", [tritonx, "--version"],
                 lambda d: d.returncode == 0 and f"(Triton {self.triton})" in d.stdout)
        self.run(venv, "tritonx plugins shows utlx ok", [tritonx, "plugins"],
                 lambda d: d.returncode == 0 and any(line.split()[:2] == ["utlx", "ok"]
                                                     for line in d.stdout.splitlines() if line.strip()))
        self.run(venv, "tritonx doctor exits 0", [tritonx, "doctor"],
                 lambda d: d.returncode == 0 and "compatible" in d.stdout)
        self.run(venv, "import triton.language.extra.tlx without import utlx",
                 [py, "-c", "import triton.language.extra.tlx as tlx; assert tlx.__name__ == 'utlx'; "
                            "assert callable(tlx.local_alloc); print('alias ->', tlx.__file__)"],
                 lambda d: d.returncode == 0 and "alias -> " in d.stdout)
        self.run(venv, "tritonx pipeline --target cuda:90 | grep tritongpu-pipeline",
                 ["sh", "-c", f"'{tritonx}' pipeline --target cuda:90 | grep tritongpu-pipeline"],
                 lambda d: d.returncode == 0 and "passes.ttgpuir.add_pipeline" in d.stdout)
        kernel = self.scratch / "add_kernel.py"
        kernel.write_text(ADD_KERNEL)
        self.run(venv, "tritonx compile --target cuda:90 (CLI)",
                 [tritonx, "compile", f"{kernel.name}:add_one", "--target", "cuda:90", "--signature",
                  "x_ptr=*fp32,y_ptr=*fp32,n=i32", "-c", "BLOCK=256", "--stage", "ptx"],
                 lambda d: d.returncode == 0 and ".target sm_90" in d.stdout)
        script = self.scratch / "tlx_compile.py"  # @triton.jit needs its source in a file
        script.write_text(TLX_COMPILE)
        self.run(venv, "TLX kernel via triton.compile(ASTSource, target=GPUTarget('cuda', 90, 32))",
                 [py, script.name], lambda d: d.returncode == 0 and "compiled for cuda:90" in d.stdout)
        if self.torch:
            self.run(venv, "torch.ops.utlx.matmul (fake tensors)", [py, "-c", TORCH_OP],
                     lambda d: d.returncode == 0 and "torch.ops.utlx.matmul" in d.stdout)

    def template_checks(self, venv: Venv) -> None:
        """tritonx new + pip install ./my-plugin[test] (numpy unchanged) + its tests + one ci/matrix.py cell."""
        py, tritonx = venv.python, str(venv.bin / "tritonx")
        numpy_version = [py, "-c", "import numpy; print(numpy.__version__)"]
        before = self.run(venv, "numpy before", numpy_version, lambda d: d.returncode == 0).stdout.strip()
        project = self.scratch / "my-plugin"
        shutil.rmtree(project, ignore_errors=True)
        self.run(venv, "tritonx new my-plugin", [tritonx, "new", "my-plugin"],
                 lambda d: d.returncode == 0 and project.is_dir())
        stale = [str(p.relative_to(project)) for p in project.rglob("*")
                 if p.name == "__pycache__" or p.suffix == ".pyc"]
        self.checks.append(Check("no __pycache__ in the generated tree", not stale, ", ".join(stale) or "none"))
        self.log(f"{'ok  ' if not stale else 'FAIL'} no __pycache__ in the generated tree {stale or ''}")
        self.run(venv, 'pip install "./my-plugin[test]"',
                 [py, "-m", "pip", "install", "-q", "--no-index", "--find-links", str(self.wheelhouse),
                  "./my-plugin[test]"], lambda d: d.returncode == 0)
        self.run(venv, f"numpy unchanged ({before})", numpy_version,
                 lambda d: d.returncode == 0 and d.stdout.strip() == before)
        self.run(venv, "my-plugin's own tests", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                 lambda d: d.returncode == 0 and " passed" in d.stdout and " failed" not in d.stdout, cwd=project)
        self.run(venv, f"my-plugin: python ci/matrix.py --versions {self.triton} (fresh venv cell)",
                 [py, "ci/matrix.py", "--versions", self.triton, "--find-links", str(self.wheelhouse)],
                 lambda d: d.returncode == 0 and f"{self.triton:<7} passed" in d.stdout, cwd=project)
        native = self.scratch / "my-native"
        shutil.rmtree(native, ignore_errors=True)
        self.run(venv, "tritonx new --native warns about the venv's Triton", [tritonx, "new", "my-native", "--native"],
                 lambda d: d.returncode == 0 and f"Triton {self.triton}" in d.stderr and "3.7.1" in d.stderr)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]


def _pip(cmd: Sequence[str], what: str) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SmokeError(f"{what} failed ({' '.join(cmd[:6])} ...):\n{(done.stderr or done.stdout)[-3000:]}")


def run_smoke(wheels: Sequence[Path], workdir: Path, *, triton: str = DEFAULT_TRITON,
              torch: str | None = DEFAULT_TORCH, template: bool = False,
              log: Callable[[str], None] = print) -> Smoke:
    """Wheelhouse, fresh venv, install, checks; returns the :class:`Smoke` with every verdict."""
    names = {w.name.split("-")[0] for w in wheels}
    missing = {"tritonx_core", "utlx"} - names
    if missing:
        raise SmokeError(f"the smoke needs the wheels of tritonx-core and utlx; missing: {', '.join(sorted(missing))}")
    smoke = Smoke(workdir=workdir, triton=triton, torch=torch, log=log)
    smoke.make_wheelhouse(wheels, TEMPLATE_EXTRAS if template else ())
    venv = smoke.create_venv()
    smoke.install_user_packages(venv, template=template)
    log(f"installed into a fresh venv at {venv.root}: triton=={triton}"
        f"{f', torch=={smoke.torch}' if smoke.torch else ''}, tritonx-core, utlx (--no-index, from the wheelhouse)")
    smoke.core_checks(venv)
    if template:
        smoke.template_checks(venv)
    return smoke


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--wheels", required=True, help="folder with the tritonx-core and utlx wheels")
    p.add_argument("--triton", default=DEFAULT_TRITON)
    p.add_argument("--torch", default=DEFAULT_TORCH, help="CPU torch version from a local wheel, or 'none'")
    p.add_argument("--template", action="store_true", help="also scaffold, install and test a plugin")
    p.add_argument("--workdir", help="where the venv and scratch go (default: a temporary directory)")
    args = p.parse_args(argv)
    wheels = sorted(Path(args.wheels).glob("*.whl"))
    if args.workdir:
        return _main_in(args, wheels, Path(args.workdir))
    with tempfile.TemporaryDirectory(prefix="tritonx-smoke-") as tmp:  # the venv is GBs: never left behind
        try:
            return _main_in(args, wheels, Path(tmp))
        finally:
            print(f"[smoke] removed {tmp} (pass --workdir DIR to keep the venv and scratch)", flush=True)


def _main_in(args: argparse.Namespace, wheels: Sequence[Path], workdir: Path) -> int:
    try:
        smoke = run_smoke(wheels, workdir, triton=args.triton, torch=None if args.torch == "none" else args.torch,
                          template=args.template, log=lambda m: print(f"[smoke] {m}", flush=True))
    except SmokeError as exc:
        print(f"smoke: error: {exc}", file=sys.stderr)
        return 1
    print(f"[smoke] {len(smoke.checks) - len(smoke.failed)} passed, {len(smoke.failed)} failed ({workdir})")
    return 1 if smoke.failed else 0


if __name__ == "__main__":
    sys.exit(main())

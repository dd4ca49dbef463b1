"""Run this folder's tests under Triton's CPU interpreter, one subprocess per test file.

Why a subprocess: ``TRITON_INTERPRET=1`` must be set before ``import triton`` (Triton's own ``@triton.jit``
library functions, e.g. ``tl.cdiv``, are decorated at import time), and other tests of the repository compile
kernels for GPU targets in the same pytest process, so it cannot be set here. When this process does not
interpret, each test file is collected as ONE item that runs the file with ``TRITON_INTERPRET=1`` in a fresh
Python and reports its pytest summary; inside that subprocess (or whenever you run this folder yourself with
``TRITON_INTERPRET=1``) the tests are collected and run normally.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")


INTERPRETING = os.environ.get("TRITON_INTERPRET", "0") == "1"
if INTERPRETING:
    # Installs the ``triton.language.extra.tlx`` alias that test modules import, as utlx's ``.pth`` does at
    # start-up in an installed environment (not there when the sources come from PYTHONPATH).
    import utlx  # noqa: F401
_TIMEOUT_S = 1800  # a loaded 2-core CI machine interprets slowly; a hang still ends


class InterpreterSubprocessFailed(Exception):
    """The test file failed under the interpreter; the message is the subprocess's pytest output."""


class InterpretedFile(pytest.File):
    def collect(self):
        yield InterpretedFileRun.from_parent(self, name="under_TRITON_INTERPRET")


class InterpretedFileRun(pytest.Item):
    def runtest(self) -> None:
        env = dict(os.environ, TRITON_INTERPRET="1")
        cmd = [sys.executable, "-m", "pytest", str(self.path), "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
        markexpr = self.config.option.markexpr
        if markexpr:
            cmd += ["-m", markexpr]
        proc = subprocess.run(cmd, env=env, cwd=str(self.config.rootpath), capture_output=True, text=True,
                              timeout=_TIMEOUT_S)
        if proc.returncode not in (0, 5):  # 5: nothing selected
            raise InterpreterSubprocessFailed((proc.stdout + proc.stderr)[-12000:])

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, InterpreterSubprocessFailed):
            return f"{self.path.name} failed under TRITON_INTERPRET=1:\n{excinfo.value}"
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"{self.path.name} (subprocess, TRITON_INTERPRET=1)"


def pytest_pycollect_makemodule(module_path, parent):
    if INTERPRETING or not module_path.name.startswith("test_"):
        return None
    return InterpretedFile.from_parent(parent, path=module_path)

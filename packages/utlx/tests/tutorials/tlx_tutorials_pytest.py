"""pytest plugin for running the test files of Meta's TLX tutorials as they are (``-p tlx_tutorials_pytest``).

Why a plugin: ``tutorials/testing/test_correctness.py`` imports
``triton.language.extra.tlx.tutorials.<name>``, which only Meta's fork provides as a real package. Before
collection this registers that package over the wheel's tutorials folder (``tutorial_package.py``), after
importing the implementation named by ``UTLX_TUTORIALS_IMPL``: ``utlx`` (this repo; the default) or
``meta`` (Meta's wheel, whose ``_utlx_autoregister`` installs its alias and plugin library). The
tutorials folder comes from ``UTLX_TUTORIALS_DIR``. ``tools/device/tlx_tutorial_tests.py`` sets both.
"""

from __future__ import annotations

import os
from pathlib import Path

import tutorial_package

IMPL_ENV = "UTLX_TUTORIALS_IMPL"
DIR_ENV = "UTLX_TUTORIALS_DIR"


def import_implementation(impl: str, tutorials: Path) -> None:
    """Import the TLX implementation and check it is the one asked for.

    Meta's ``utlx_plugin`` is imported explicitly: it puts itself in ``sys.modules`` as
    ``triton.language.extra.tlx``, which beats any alias finder a .pth installed at start-up (this
    repo's, in a development virtualenv, would otherwise answer first and import the wheel's ``utlx``).
    """
    wheel_root = tutorials.resolve().parents[1]
    if impl == "meta":
        import _utlx_autoregister  # noqa: F401  (its plugin library and aliases)
        import utlx_plugin  # noqa: F401
    elif impl == "utlx":
        import utlx

        if Path(utlx.__file__).resolve().is_relative_to(wheel_root):
            raise ImportError(f"'utlx' was imported from Meta's wheel ({utlx.__file__}), not from this repo")
    else:
        raise ValueError(f"{IMPL_ENV}={impl!r}: expected 'utlx' or 'meta'")


def pytest_configure(config) -> None:
    folder = os.environ.get(DIR_ENV)
    if not folder or not Path(folder).is_dir():
        raise ValueError(f"{DIR_ENV}={folder!r} is not the tutorials folder of Meta's wheel")
    import_implementation(os.environ.get(IMPL_ENV, "utlx"), Path(folder))
    tutorial_package.register(Path(folder))


def pytest_report_header(config) -> str:
    import sys

    tlx = sys.modules.get(tutorial_package.PARENT)
    return f"TLX implementation: {os.environ.get(IMPL_ENV, 'utlx')} ({getattr(tlx, '__file__', tlx)})"

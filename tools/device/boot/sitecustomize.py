"""Process the .pth files of the folders in TRITONX_PTH_DIRS, then run the sitecustomize this one shadows.

Why: run_gpu_tests.sh installs wheels into a plain folder on PYTHONPATH, and Python only runs the .pth
files of site dirs. A wheel such as triton-utlx sets TRITON_PLUGIN_PATHS from its .pth, which must happen
before libtriton is imported. `site.addsitedir` on a folder already on sys.path keeps its place there and
just processes its .pth files. This folder is put on PYTHONPATH only when such .pth files exist.
"""

import importlib.util
import os
import site
import sys

_here = os.path.dirname(os.path.abspath(__file__))
for _d in filter(None, os.environ.get("TRITONX_PTH_DIRS", "").split(os.pathsep)):
    site.addsitedir(_d)

# Chain to the next sitecustomize on sys.path (distributions ship one), so shadowing it changes nothing else.
for _entry in sys.path:
    _candidate = os.path.join(_entry or ".", "sitecustomize.py")
    if os.path.abspath(_entry or ".") != _here and os.path.isfile(_candidate):
        _spec = importlib.util.spec_from_file_location("_tritonx_chained_sitecustomize", _candidate)
        if _spec and _spec.loader:
            _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
        break

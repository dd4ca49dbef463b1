"""CPU implementations of every utlx op for Triton's interpreter (``TRITON_INTERPRET=1``), plus a hazard
checker (on by default; ``UTLX_HAZARD_CHECKS=0`` turns it off).

Importing this package registers the implementations with ``utlx.language._dispatch``; :func:`install`
hooks them into the interpreter (``import utlx`` calls it).
"""

from utlx.interpreter import ops_barrier, ops_mem, ops_mma, ops_util, tasks  # noqa: F401  (registration)
from utlx.interpreter.errors import UtlxDeadlockError, UtlxHazardError, UtlxInterpreterError
from utlx.interpreter.hooks import install, installed
from utlx.interpreter.state import CHECKS_ENV

__all__ = ["CHECKS_ENV", "UtlxDeadlockError", "UtlxHazardError", "UtlxInterpreterError", "install", "installed"]

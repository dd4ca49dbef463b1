"""The utlx compile path: TLX ops traced as placeholders, lowered to TTGIR after conversion.

Importing this package registers the compiler body of every TLX op with
``utlx.language._dispatch`` (see ``CONTRACT.md`` next to this file).
"""

from __future__ import annotations

from . import ops, tasks  # noqa: F401  (register the compiler bodies; tasks: async_tasks / async_task)
from .errors import UtlxCompileError
from .lowering import lower_module
from .stages import install_standalone_hook, lowering_pass, uninstall_standalone_hook

__all__ = ["UtlxCompileError", "install_standalone_hook", "lower_module", "lowering_pass",
           "uninstall_standalone_hook"]

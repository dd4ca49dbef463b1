"""AMD's TLX ops (buffer ops, direct-to-LDS copies, warp pipelines, register-class and scheduling hints).
Importing it registers their compile-path bodies for ``hip`` targets, their lowerings, the ``hip`` lowering vendor,
AMD's passes, and the errors NVIDIA-only ops give on AMD (:mod:`.refusals`)."""

from . import ops, refusals, stages, vendor  # noqa: F401

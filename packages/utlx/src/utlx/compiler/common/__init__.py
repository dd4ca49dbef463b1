"""What every vendor's TLX ops share: placeholders, values, argument checks, layouts, the lowering driver, and the
ops that mean the same everywhere (shared-memory buffers and views, async copies, register layouts, global-memory
ops). Importing it registers those ops' compile-path bodies and lowerings."""

from . import global_ops, layout_ops, mem_ops, stages, view_ops  # noqa: F401

"""The tritonx plugin object: its pipeline edits and, for tritonx, how to find it.

``make_plugin`` is the ``tritonx.plugins`` entry point. It is called when tritonx discovers plugins,
so it must be cheap and must not compile anything. The plugin's one pipeline holds the passes of its
language (``language.py``: the ops kernels call) and its own edits.
"""

from __future__ import annotations

import tritonx

from . import PLUGIN_NAME, __version__
from .language import lang
{%- if cookiecutter.variant == "python" %}
from .passes import mark_kernels

#: The stock pass the Python pass runs after (an MLIR pass argument; the same on CUDA and AMD).
ANCHOR = "tritongpu-coalesce"


def make_pipeline() -> tritonx.Pipeline:
    """The language's passes, then one edit: run :func:`mark_kernels` right after TTGIR's coalescing pass."""
    pipeline = tritonx.Pipeline(PLUGIN_NAME).extend(lang.pipeline())
    pipeline.insert_after(ANCHOR, mark_kernels)
    return pipeline

{%- else %}
from .native import FROM_SQUARE, TAG, TO_SQUARE, library_path

#: Last pass of the TTIR stage: the conversion runs after it, so the TTIR dump shows the dialect's op.
TTIR_END = "triton-loop-unroll"
#: First pass of the TTGIR stage: the lowering must run before it (TTGIR conversion knows no such op).
TTGIR_START = "convert-triton-to-tritongpu"
#: The tag pass runs after TTGIR's coalescing pass, with this argument.
TAG_ANCHOR = "tritongpu-coalesce"
TAG_VALUE = "{{ cookiecutter.plugin_name }}-was-here"


def language_pipeline() -> tritonx.Pipeline:
    """What kernels calling the language's ops need: its ops built at the start of TTIR (by the library's
    custom op) and lowered by the library's conversion pass before TTGIR."""
    pipeline = tritonx.Pipeline(PLUGIN_NAME).extend(lang.pipeline())
    pipeline.insert_before(TTGIR_START, FROM_SQUARE)
    return pipeline


def make_pipeline() -> tritonx.Pipeline:
    """The language's passes, then three native passes: into the dialect at the end of TTIR (``x * x``
    written in Triton), back out before TTGIR, and a tag."""
    pipeline = language_pipeline()
    pipeline.insert_after(TTIR_END, TO_SQUARE)
    pipeline.insert_after(TAG_ANCHOR, TAG, args=[TAG_VALUE])
    return pipeline

{%- endif %}


def make_plugin() -> tritonx.Plugin:
    """The plugin tritonx registers under the name ``{{ cookiecutter.plugin_name }}``
    {%- if cookiecutter.variant != "python" %}, with its library{% endif %}."""
    return tritonx.Plugin(
        name=PLUGIN_NAME,
        version=__version__,
        description={{ cookiecutter.description | tojson }},
        pipelines=[make_pipeline()],
{%- if cookiecutter.variant != "python" %}
        native_libraries=[str(library_path())],
{%- endif %}
        cache_key=lang.cache_key,
    )

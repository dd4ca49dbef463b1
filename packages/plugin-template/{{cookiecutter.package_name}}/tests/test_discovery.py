"""The plugin is found and enabled the way a user's tritonx finds it: through its entry point."""

from __future__ import annotations

import importlib.metadata as md

import pytest
import tritonx

from {{ cookiecutter.module_name }} import PLUGIN_NAME, __version__
{%- if cookiecutter.variant == "python" %}
from {{ cookiecutter.module_name }}.passes import VISITED_ATTR
{%- else %}
from {{ cookiecutter.module_name }}.native import SQUARE_OP
{%- endif %}

from kernels import BACKENDS, compile_square_add
{%- if cookiecutter.variant == "native" %}

pytestmark = pytest.mark.usefixtures("native_library")
{%- endif %}

#: Where the plugin's effect shows, and how.
{%- if cookiecutter.variant == "python" %}
EFFECT_STAGE, EFFECT_TEXT = "ttgir", f"{VISITED_ATTR} = true"
{%- else %}
EFFECT_STAGE, EFFECT_TEXT = "ttir", f"{SQUARE_OP} "
{%- endif %}


def test_entry_point_is_declared():
    eps = [ep for ep in md.entry_points(group="tritonx.plugins") if ep.name == PLUGIN_NAME]
    assert [ep.value for ep in eps] == ["{{ cookiecutter.module_name }}.plugin:make_plugin"]


def test_tritonx_discovers_the_plugin():
    assert PLUGIN_NAME in [p.name for p in tritonx.list_plugins()]
    plugin = tritonx.get_plugin(PLUGIN_NAME)
    assert plugin.version == __version__
    assert plugin.distribution is not None and plugin.distribution.replace("_", "-").lower() == (
        "{{ cookiecutter.package_name }}".replace("_", "-").lower()
    )
    assert [p.name for p in plugin.pipelines] == [PLUGIN_NAME]


@pytest.mark.parametrize("backend", BACKENDS)
def test_enable_plugins_applies_it_and_disable_removes_it(backend):
    assert EFFECT_TEXT not in compile_square_add(backend).asm[EFFECT_STAGE]
    tritonx.enable_plugins([PLUGIN_NAME])
    try:
        assert EFFECT_TEXT in compile_square_add(backend).asm[EFFECT_STAGE]
    finally:
        tritonx.disable_plugins([PLUGIN_NAME])
    assert EFFECT_TEXT not in compile_square_add(backend).asm[EFFECT_STAGE]

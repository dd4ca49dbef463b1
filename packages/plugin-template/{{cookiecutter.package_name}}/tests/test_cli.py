"""`tritonx pipeline --plugins {{ cookiecutter.plugin_name }}` shows the plugin's edits where the plugin puts them."""

from __future__ import annotations

import json

import pytest

from {{ cookiecutter.module_name }} import PLUGIN_NAME
{%- if cookiecutter.variant == "python" %}
from {{ cookiecutter.module_name }}.plugin import ANCHOR
{%- else %}
from {{ cookiecutter.module_name }}.native import TO_SQUARE
from {{ cookiecutter.module_name }}.plugin import TTIR_END
{%- endif %}

from kernels import BACKENDS, TARGETS

#: The stage shown, and each pass the plugin inserts there (as the CLI names it) with the pass before it:
#: first its language's pass, then its own edit.
{%- if cookiecutter.variant == "python" %}
STAGE = "ttgir"
INSERTED = [(f"python:{PLUGIN_NAME}-lower", "convert-triton-to-tritongpu"), ("python:mark_kernels", ANCHOR)]
{%- else %}
STAGE = "ttir"
INSERTED = [(f"python:{PLUGIN_NAME}-native-ops", "inline"), (TO_SQUARE, TTIR_END)]

pytestmark = pytest.mark.usefixtures("native_library")
{%- endif %}


@pytest.mark.parametrize("backend", BACKENDS)
def test_tritonx_pipeline_marks_the_edit(backend):
    # typer comes with tritonx-core; only a bare PYTHONPATH setup can lack it.
    CliRunner = pytest.importorskip("typer.testing").CliRunner
    from tritonx.cli.app import app

    args = ["pipeline", "--target", TARGETS[backend], "--stage", STAGE, "--plugins", PLUGIN_NAME, "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    passes = json.loads(result.stdout)["stages"][STAGE]
    # other installed plugins (utlx...) may insert passes too: look at ours, and at the stock passes
    ours = [p for p in passes if p["mark"] != "inserted" or p["edit"] == PLUGIN_NAME]
    names = [p["name"] for p in ours]
    inserted = [p["name"] for p in ours if p["mark"] == "inserted"]
    assert inserted == [name for name, _ in INSERTED]
    for name, before in INSERTED:
        assert names[names.index(name) - 1] == before

"""`tritonx pipeline --plugins {{ cookiecutter.plugin_name }}` shows the plugin's edit where the plugin puts it."""

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

#: The stage the edit is in, the anchor before it, and the inserted pass as the CLI names it.
{%- if cookiecutter.variant == "python" %}
STAGE, BEFORE, INSERTED = "ttgir", ANCHOR, "python:mark_kernels"
{%- else %}
STAGE, BEFORE, INSERTED = "ttir", TTIR_END, TO_SQUARE

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
    names = [p["name"] for p in passes]
    # other installed plugins (utlx...) may insert passes too: look at ours
    inserted = [p for p in passes if p["mark"] == "inserted" and p["edit"] == PLUGIN_NAME]
    assert [(p["name"], p["edit"]) for p in inserted] == [(INSERTED, PLUGIN_NAME)]
    assert names[names.index(INSERTED) - 1] == BEFORE

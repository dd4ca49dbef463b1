"""The answer rules (pre-generation hook): each bad answer is refused with its name in the message."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomllib

GOOD = {
    "package_name": "tritonx-myplugin",
    "module_name": "tritonx_myplugin",
    "plugin_name": "myplugin",
    "variant": "python",
    "license": "MIT",
    "backends": "cuda,hip",
    "triton_range": ">=3.6,<3.10",
}


def test_defaults_are_valid(validation):
    assert validation.validate_answers(GOOD) == []


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("package_name", "1plugin", "not a valid distribution name"),
        ("package_name", "my plugin", "not a valid distribution name"),
        ("package_name", "plugin-", "not a valid distribution name"),
        ("module_name", "class", "not a lowercase Python identifier"),
        ("module_name", "My_Plugin", "not a lowercase Python identifier"),
        ("module_name", "triton", "would shadow"),
        ("plugin_name", "MyPlugin", "lowercase words"),
        ("plugin_name", "my__plugin", "lowercase words"),
        ("plugin_name", "p" * 41, "at most 40"),
        ("variant", "rust", "not one of python, native"),
        ("license", "GPL-3.0", "not one of MIT"),
        ("backends", "cuda,tpu", "subset of cuda, hip"),
        ("backends", "", "subset of cuda, hip"),
        ("triton_range", ">=3.6", "admits Triton 3.10.0"),
    ],
)
def test_each_bad_answer_is_named(validation, key, value, says):
    errors = validation.validate_answers({**GOOD, key: value})
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"{key}: ")
    assert says in errors[0]


@pytest.mark.parametrize("spec", [">=3.6,<3.10", "==3.7.1", ">=3.7,<3.9", "~=3.8.0", "==3.9.*", ">3.6.0, <=3.9.0"])
def test_supported_ranges(validation, spec):
    assert validation.validate_triton_range(spec) == []


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (">=3.6", "admits Triton 3.10.0"),  # no upper bound
        ("<3.10", "admits Triton 0.0"),  # no lower bound
        (">=3.5,<3.9", "admits Triton 3.5.0"),
        ("~=3.8", "admits Triton 3.10.0"),  # ~=3.8 means >=3.8,<4
        (">=3.10,<3.12", "admits no Triton version tritonx supports"),
        ("==4.0", "admits no Triton version tritonx supports"),
        ("3.8", "cannot parse"),
        (">=3.7;<3.9", "cannot parse"),
        ("", "empty"),
        (">=3.7.*", "wildcard"),
    ],
)
def test_unsupported_or_malformed_ranges(validation, spec, says):
    errors = validation.validate_triton_range(spec)
    assert errors and all(e.startswith("triton_range: ") for e in errors)
    assert any(says in e for e in errors), errors


def test_native_needs_the_plugin_abi(validation):
    assert validation.validate_triton_range("==3.7.1", variant="native") == []
    errors = validation.validate_triton_range(">=3.6,<3.10", variant="native")
    assert any("native plugins need Triton >=3.7" in e for e in errors)


def test_admits_follows_specifier_rules(validation):
    admits = validation.admits
    assert admits("~=3.8.0", "3.8.5") and not admits("~=3.8.0", "3.9.0")
    assert admits("==3.7.*", "3.7.1") and not admits("==3.7.*", "3.8.0")
    assert admits("!=3.8.0,>=3.7,<3.10", "3.9.0") and not admits("!=3.8.0,>=3.7,<3.10", "3.8.0")
    assert admits("==3.7", "3.7.0")  # trailing zeros do not matter


def test_supported_range_matches_tritonx_core(validation):
    core = tomllib.loads((Path(__file__).resolve().parents[2] / "core" / "pyproject.toml").read_text())
    assert f"triton{validation.SUPPORTED_TRITON}" in core["project"]["dependencies"]


def test_known_releases_match_the_repo_matrix(validation):
    matrix = tomllib.loads((Path(__file__).resolve().parents[3] / "ci" / "matrix.toml").read_text())
    assert list(validation.KNOWN_TRITON_RELEASES) == matrix["triton"]["versions"]

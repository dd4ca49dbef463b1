"""ci/resolve_env.py: the default hatch env resolves from the public index alone (README commands 1 and 2).

These tests ask pypi.org (index pages and metadata only, no install); without network they skip and say so.
"""

from __future__ import annotations

import pytest


def _offline(mod) -> None:
    reason = mod.index_reachable()
    if reason:
        pytest.skip(reason)


def test_requirements_are_the_default_env_plus_the_members_own(resolve_mod):
    reqs = resolve_mod.default_env_requirements()
    names = {resolve_mod._name(r) for r in reqs}
    assert {"torch", "triton", "numpy", "pytest", "typer"} <= names
    assert not names & {"tritonx-core", "utlx"}  # the members come from the checkout, not the index


def test_clean_env_drops_every_local_pip_setting(resolve_mod, monkeypatch):
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels")
    monkeypatch.setenv("UV_FIND_LINKS", "/opt/wheels")
    env = resolve_mod.clean_env()
    assert "PIP_FIND_LINKS" not in env and "UV_FIND_LINKS" not in env
    assert env["PIP_CONFIG_FILE"] == resolve_mod.os.devnull and env["UV_NO_CONFIG"] == "1"


def test_default_env_resolves_from_the_public_index_on_every_supported_python(resolve_mod):
    _offline(resolve_mod)
    outcomes = resolve_mod.check()
    for outcome in outcomes:
        if outcome.skipped:
            pytest.skip(outcome.skipped)
        assert outcome.ok, outcome.line()
        # the pair that must agree: PyPI's torch wheel pins its triton
        assert outcome.pins["triton"] == "3.8.0", outcome.line()


def test_a_conflicting_pair_is_reported(resolve_mod):
    """The pins the README commands once had: the index's torch 2.13.0 wants triton 3.7.1."""
    _offline(resolve_mod)
    (outcome,) = resolve_mod.check(["torch==2.13.0", "triton==3.8.0"], pythons=("3.11",))
    if outcome.skipped:
        pytest.skip(outcome.skipped)
    assert not outcome.ok and "triton" in outcome.error and "does NOT resolve" in outcome.line()

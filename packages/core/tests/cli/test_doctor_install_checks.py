"""``tritonx doctor``'s install checks: known-broken version pairs and plugin packages another wheel ships."""

from __future__ import annotations

from tritonx.compat import known_broken as kb


def test_doctor_reports_a_known_broken_pair_and_exits_1(cli, monkeypatch):
    monkeypatch.setattr(kb, "installed_versions", lambda names: {"triton": "3.6.0", "numpy": "2.4.6"})
    result = cli("doctor")
    assert result.exit_code == 1
    assert "known-broken versions (triton 3.6.0, numpy 2.4.6)" in result.output
    assert "pip install 'numpy<2.4'" in result.output
    report = cli("doctor", "--json")
    assert '"fix": "pip install \'numpy<2.4\'"' in report.stdout


def test_doctor_reports_no_known_broken_pair_here(cli):
    assert cli.json("doctor")["known_broken"] == kb.found()

"""Run one tutorial-corpus case script in a fresh interpreter and read back its result (the AMD and Blackwell
corpus runners share it): the script prints one ``RESULT <json>`` line; a timeout or a crash without that line
becomes the case's ``first_error``, so one broken case never takes the test session down."""

from __future__ import annotations

import json
import subprocess


def run_case_script(cmd: list[str], case_id: str, timeout: float, env: dict[str, str]) -> dict:
    """The ``RESULT`` dict the case script ``cmd`` printed last (with its stderr tail), or a failed result
    naming the timeout or the crash (exit code and last line of output)."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"case": case_id, "ok": False, "first_error": f"Timeout: no result within {timeout:.0f} s"}
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    if not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["(no output)"]
        return {"case": case_id, "ok": False, "first_error": f"Crash: exit {out.returncode}: {tail[0][:300]}",
                "stderr": out.stderr[-4000:]}
    result = json.loads(lines[-1][len("RESULT "):])
    result["stderr"] = out.stderr[-4000:]
    return result

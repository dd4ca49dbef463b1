"""Does the default hatch environment resolve from the public index alone, on every supported Python?

Why: the README's first two commands build that environment on a user's machine, where no local wheel and
no pip configuration of ours exist. A pin that only resolves here (a local CPU torch wheel found through
``PIP_FIND_LINKS``) once broke them for every user; this check runs in the test suite so it cannot again.

What it resolves: the default env's ``dependencies`` of pyproject.toml plus every workspace member's own
``[project].dependencies`` (the members themselves are installed from the checkout, so their names are
dropped), against https://pypi.org/simple only: every pip and uv setting of this machine is ignored
(``PIP_CONFIG_FILE`` is os.devnull, ``PIP_*``/``UV_*`` variables are removed, ``uv --no-config``).

How: with uv (``uv pip compile --python-version X``) for each Python of :data:`PYTHONS` (a few seconds
each, markers evaluated for that Python); without uv, ``pip install --dry-run`` for the running Python
only. Nothing is downloaded but index pages and metadata; nothing is installed.

Without network (pypi.org unreachable) it skips, saying so: exit 0, and the test skips.

Usage:
    python ci/resolve_env.py                 # every Python of PYTHONS (uv), or this one (pip)
    python ci/resolve_env.py --python 3.12   # one Python
    python ci/resolve_env.py --req 'torch==2.13.0' --req 'triton==3.8.0'   # resolve these instead
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parent.parent
INDEX_URL = "https://pypi.org/simple"
INDEX_HOST = ("pypi.org", 443)
#: The Pythons the README promises (3.10+); each is resolved when uv is there.
PYTHONS = ("3.10", "3.11", "3.12")
PLATFORM = "x86_64-manylinux_2_28"
TIMEOUT_S = 300
#: Packages whose resolved versions the summary names (the pairs that must agree).
NOTED = ("torch", "triton", "numpy")


@dataclass
class Outcome:
    """The result for one Python: resolved (with the pinned versions), failed (with why), or skipped."""

    python: str
    ok: bool
    skipped: str | None = None
    pins: dict[str, str] = field(default_factory=dict)
    error: str = ""

    def line(self) -> str:
        if self.skipped:
            return f"resolve_env: python {self.python}: skipped: {self.skipped}"
        if self.ok:
            noted = ", ".join(f"{n} {self.pins[n]}" for n in NOTED if n in self.pins)
            return f"resolve_env: python {self.python}: resolves ({noted}; {len(self.pins)} packages)"
        return f"resolve_env: python {self.python}: does NOT resolve from {INDEX_URL}:\n{self.error}"


def _name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    return re.sub(r"[-_.]+", "-", match.group(1)).lower() if match else requirement


def default_env_requirements(root: Path = ROOT) -> list[str]:
    """The default hatch env's dependencies plus its workspace members' own dependencies."""
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    env = pyproject["tool"]["hatch"]["envs"]["default"]
    members = [root / m for m in env.get("workspace", {}).get("members", [])]
    member_projects = [tomllib.loads((m / "pyproject.toml").read_text())["project"] for m in members]
    member_names = {_name(p["name"]) for p in member_projects}
    reqs = list(env.get("dependencies", []))
    for project in member_projects:
        reqs += [r for r in project.get("dependencies", []) if _name(r) not in member_names]
    return reqs


def index_reachable(timeout: float = 5.0) -> str | None:
    """None when the public index answers on its port; otherwise why not (the reason to skip)."""
    try:
        with socket.create_connection(INDEX_HOST, timeout=timeout):
            return None
    except OSError as exc:
        return f"{INDEX_HOST[0]}:{INDEX_HOST[1]} is unreachable ({exc}); not checking that the env resolves"


def clean_env() -> dict[str, str]:
    """This process's environment without any pip or uv setting, and with pip's config files off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def find_uv() -> list[str] | None:
    """The uv command: on PATH, or as this Python's ``uv`` module (the default env installs it)."""
    exe = shutil.which("uv")
    if exe:
        return [exe]
    try:
        import uv  # type: ignore[import-not-found]

        return [uv.find_uv_bin()]
    except Exception:  # not installed: the pip fallback covers this Python
        return None


def _parse_pins(text: str) -> dict[str, str]:
    pins = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;]+)", line)
        if match:
            pins[_name(match.group(1))] = match.group(2)
    return pins


def resolve_uv(uv: Sequence[str], reqs: Sequence[str], python: str) -> Outcome:
    with tempfile.TemporaryDirectory(prefix="resolve-env-") as tmp:
        req_file = Path(tmp) / "requirements.in"
        req_file.write_text("\n".join(reqs) + "\n")
        cmd = [*uv, "pip", "compile", "--no-config", "--quiet", "--no-header", "--index-url", INDEX_URL,
               "--python-version", python, "--python-platform", PLATFORM, str(req_file)]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Outcome(python, ok=False, skipped=f"uv took over {TIMEOUT_S} s (a slow network?)")
    if done.returncode != 0:
        return Outcome(python, ok=False, error=(done.stderr or done.stdout).strip())
    return Outcome(python, ok=True, pins=_parse_pins(done.stdout))


def resolve_pip(reqs: Sequence[str]) -> Outcome:
    python = ".".join(map(str, sys.version_info[:2]))
    with tempfile.TemporaryDirectory(prefix="resolve-env-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
               "--index-url", INDEX_URL, "--retries", "1", "--report", str(report), *reqs]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Outcome(python, ok=False, skipped=f"pip took over {TIMEOUT_S} s (a slow network?)")
        if done.returncode != 0:
            return Outcome(python, ok=False, error=(done.stderr or done.stdout).strip())
        import json

        items = json.loads(report.read_text())["install"]
    return Outcome(python, ok=True, pins={_name(i["metadata"]["name"]): i["metadata"]["version"] for i in items})


def check(reqs: Sequence[str] | None = None, pythons: Sequence[str] = PYTHONS) -> list[Outcome]:
    """Resolve ``reqs`` (default: the default hatch env) for each Python; skipped outcomes without network."""
    reqs = list(reqs) if reqs is not None else default_env_requirements()
    offline = index_reachable()
    if offline:
        return [Outcome(p, ok=False, skipped=offline) for p in pythons]
    uv = find_uv()
    if uv is None:
        return [resolve_pip(reqs)]
    return [resolve_uv(uv, reqs, p) for p in pythons]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", action="append", help=f"a Python version to resolve for (default: {PYTHONS})")
    parser.add_argument("--req", action="append", help="resolve these requirements instead of the default env")
    args = parser.parse_args(argv)
    outcomes = check(args.req, tuple(args.python or PYTHONS))
    for outcome in outcomes:
        print(outcome.line())
    return 0 if all(o.ok or o.skipped for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Validate the answers before cookiecutter writes a single file.

Why here: `cookiecutter packages/plugin-template` (no tritonx involved) must refuse bad answers too, and
`tritonx new` loads this very file to run the same checks before it renders (one source of truth).
Cookiecutter renders this file with Jinja before running it; only the ``__main__`` block holds
template expressions, inside string literals, so the module also imports cleanly unrendered.
Standard library only: the hook runs in whatever interpreter runs cookiecutter.
"""

from __future__ import annotations

import json
import keyword
import re
import sys

#: The Triton versions tritonx-core supports; keep equal to tritonx-core's ``triton`` dependency.
SUPPORTED_TRITON = ">=3.6,<3.10"
#: Released Triton versions inside the supported range (the generated ci/matrix.py runs these).
KNOWN_TRITON_RELEASES = ("3.6.0", "3.7.1", "3.8.0", "3.9.0")
#: Native (.so) plugins need the plugin ABI, which Triton added in 3.7.
NATIVE_MIN_TRITON = "3.7"
LICENSES = ("MIT", "Apache-2.0", "BSD-3-Clause")
VARIANTS = ("python", "native")
BACKENDS = ("cuda", "hip")
#: Import names a plugin must not shadow.
RESERVED_MODULES = frozenset({"triton", "tritonx", "torch", "numpy", "utlx", "test", "tests", "src"})

_PEP508_NAME = re.compile(r"^[A-Za-z](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_PLUGIN_NAME = re.compile(r"^(?=.{1,40}$)[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_CLAUSE = re.compile(r"^\s*(~=|===|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?\s*$")
# Versions on both sides of the supported range, used to find specifiers that reach outside it.
_PROBES_OUTSIDE = (
    "0.0", "1.0", "2.0", "2.3.1", "3.0.0", "3.1.0", "3.2.0", "3.3.1", "3.4.0", "3.5.0", "3.5.1", "3.5.99",
    "3.10.0", "3.10.1", "3.10.99", "3.11.0", "3.12.0", "3.99", "4.0", "4.1", "5.0", "99.0",
)  # fmt: skip


class RangeError(ValueError):
    """A Triton version specifier that cannot be parsed."""


def _version(text: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in text.split("."))
    while len(parts) > 1 and parts[-1] == 0:
        parts = parts[:-1]
    return parts


def _clauses(spec: str) -> list[tuple[str, str, bool]]:
    """Parse ``spec`` into (operator, version, wildcard) clauses; only numeric release versions."""
    if not spec or not spec.strip():
        raise RangeError("the Triton range is empty; write for example '>=3.7,<3.10'")
    out = []
    for raw in spec.split(","):
        m = _CLAUSE.match(raw)
        if not m:
            raise RangeError(
                f"cannot parse {raw.strip()!r} in the Triton range {spec!r}; use clauses like '>=3.7', '<3.10', "
                "'==3.7.1', '~=3.8.0' separated by commas"
            )
        op, ver, star = m.group(1), m.group(2), bool(m.group(3))
        if star and op not in ("==", "!="):
            raise RangeError(f"a '.*' wildcard only goes with '==' or '!=', not in {raw.strip()!r}")
        if op == "~=" and "." not in ver:
            raise RangeError(f"'~=' needs at least two version parts, not {raw.strip()!r}")
        out.append((op, ver, star))
    return out


def _admits_clause(op: str, ver: str, star: bool, candidate: str) -> bool:
    c, v = _version(candidate), _version(ver)
    if star:
        n = len(ver.split("."))
        prefix = tuple(int(p) for p in candidate.split(".")[:n])
        prefix = prefix + (0,) * (n - len(prefix))
        match = prefix == tuple(int(p) for p in ver.split("."))
        return match if op == "==" else not match
    if op in ("==", "==="):
        return c == v
    if op == "!=":
        return c != v
    if op == "<":
        return c < v
    if op == "<=":
        return c <= v
    if op == ">":
        return c > v
    if op == ">=":
        return c >= v
    # ~=X.Y.Z means >=X.Y.Z and ==X.Y.*
    head = ".".join(ver.split(".")[:-1])
    return c >= v and _admits_clause("==", head, True, candidate)


def admits(spec: str, candidate: str) -> bool:
    """True when the version ``candidate`` satisfies every clause of ``spec``."""
    return all(_admits_clause(op, ver, star, candidate) for op, ver, star in _clauses(spec))


def validate_triton_range(spec: str, *, variant: str = "python") -> list[str]:
    """Errors for a Triton range that reaches outside what tritonx supports, or admits nothing in it."""
    try:
        clauses = _clauses(spec)
    except RangeError as exc:
        return [f"triton_range: {exc}"]
    errors = []
    outside = [p for p in _PROBES_OUTSIDE if admits(spec, p)]
    if outside:
        errors.append(
            f"triton_range: {spec!r} admits Triton {outside[0]}, outside what tritonx supports "
            f"({SUPPORTED_TRITON}); bound it on both sides, for example '>=3.7,<3.10'"
        )
    candidates = {*KNOWN_TRITON_RELEASES, *(ver for _, ver, _ in clauses)}
    inside = [c for c in candidates if admits(spec, c) and admits(SUPPORTED_TRITON, c)]
    if not inside:
        errors.append(f"triton_range: {spec!r} admits no Triton version tritonx supports ({SUPPORTED_TRITON})")
    if variant == "native":
        too_old = [c for c in candidates if admits(spec, c) and _version(c) < _version(NATIVE_MIN_TRITON)]
        if too_old:
            errors.append(
                f"triton_range: {spec!r} admits Triton {sorted(too_old)[0]}, but native plugins need Triton "
                f">={NATIVE_MIN_TRITON} (the plugin ABI does not exist before); use for example '==3.7.1'"
            )
    return errors


def _must_match(answers: dict[str, str], key: str, pattern: re.Pattern[str], rule: str) -> list[str]:
    """``[]`` when answer ``key`` matches ``pattern``, else the one error naming the answer, its value and ``rule``."""
    value = answers.get(key, "")
    return [] if pattern.match(value) else [f"{key}: {value!r} {rule}"]


def validate_answers(answers: dict[str, str]) -> list[str]:
    """Every problem with the answers, each naming the answer at fault; empty when all are valid."""
    errors = []
    errors += _must_match(answers, "package_name", _PEP508_NAME,
                          "is not a valid distribution name (letters, digits, '-', '_', '.'; start with a letter, "
                          "end with a letter or digit)")
    module = answers.get("module_name", "")
    if not module.isidentifier() or keyword.iskeyword(module) or module != module.lower():
        errors.append(f"module_name: {module!r} is not a lowercase Python identifier")
    elif module in RESERVED_MODULES:
        errors.append(f"module_name: {module!r} would shadow an existing package; choose another name")
    errors += _must_match(answers, "plugin_name", _PLUGIN_NAME,
                          "must be lowercase words of [a-z0-9] joined by single '_', starting with a letter, at most "
                          "40 characters: it prefixes native pass names and names the MLIR dialect")
    variant = answers.get("variant", "")
    if variant not in VARIANTS:
        errors.append(f"variant: {variant!r} is not one of {', '.join(VARIANTS)}")
    license_ = answers.get("license", "")
    if license_ not in LICENSES:
        errors.append(f"license: {license_!r} is not one of {', '.join(LICENSES)}")
    backends = [b.strip() for b in answers.get("backends", "").split(",") if b.strip()]
    unknown = [b for b in backends if b not in BACKENDS]
    if not backends or unknown:
        errors.append(
            f"backends: {answers.get('backends', '')!r} must be a comma-separated subset of {', '.join(BACKENDS)}"
        )
    errors += validate_triton_range(answers.get("triton_range", ""), variant=variant)
    return errors


if __name__ == "__main__":
    _answers = {
        "package_name": json.loads(r'{{ cookiecutter.package_name | tojson }}'),
        "module_name": json.loads(r'{{ cookiecutter.module_name | tojson }}'),
        "plugin_name": json.loads(r'{{ cookiecutter.plugin_name | tojson }}'),
        "variant": json.loads(r'{{ cookiecutter.variant | tojson }}'),
        "license": json.loads(r'{{ cookiecutter.license | tojson }}'),
        "backends": json.loads(r'{{ cookiecutter.backends | tojson }}'),
        "triton_range": json.loads(r'{{ cookiecutter.triton_range | tojson }}'),
    }
    _errors = validate_answers(_answers)
    if _errors:
        print("tritonx plugin template: invalid answers:", file=sys.stderr)
        for _e in _errors:
            print(f"  - {_e}", file=sys.stderr)
        sys.exit(1)

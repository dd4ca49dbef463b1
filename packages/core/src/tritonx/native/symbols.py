"""Will every symbol a plugin needs be found when it is loaded into a Triton process?

The providers are the libraries ld.so puts in the plugin's lookup scope: the global scope of a Python
process (the interpreter executable and what it NEEDS) and the plugin's own dependency closure, where
``libtriton.so`` is the installed Triton's. A versioned reference (``memcpy@GLIBC_2.14``) needs a
definition of that version; a weak undefined reference may stay unresolved.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .elf import ANY_VERSION, ElfFormatError, ElfImage, UndefinedSymbol
from .libpath import dependency_closure


@dataclass
class SymbolReport:
    """Result of resolving a plugin's undefined symbols."""

    providers: list[str] = field(default_factory=list)
    checked: int = 0
    unresolved: list[UndefinedSymbol] = field(default_factory=list)
    weak_unresolved: int = 0


def process_scope(preloaded: dict[str, str]) -> list[str]:
    """The libraries of the global lookup scope of this Python process (executable first)."""
    executable = os.path.realpath(sys.executable)
    closure = dependency_closure(executable, preloaded=preloaded)
    return [executable, *closure.libraries]


def resolve_undefined(undefined: list[UndefinedSymbol], providers: list[str]) -> SymbolReport:
    """Look every strong undefined symbol up in ``providers`` (paths of ELF shared objects)."""
    report = SymbolReport(providers=list(providers))
    wanted = {s.name for s in undefined}
    exported: dict[str, set[str]] = {}
    for path in providers:
        try:
            with ElfImage(path) as image:
                for name, versions in image.exported_symbols(wanted).items():
                    exported.setdefault(name, set()).update(versions)
        except (ElfFormatError, OSError):
            continue
    for symbol in undefined:
        report.checked += 1
        versions = exported.get(symbol.name)
        found = versions is not None and (
            symbol.version is None or symbol.version in versions or ANY_VERSION in versions
        )
        if found:
            continue
        if symbol.weak:
            report.weak_unresolved += 1
        else:
            report.unresolved.append(symbol)
    return report


def describe(symbol: UndefinedSymbol) -> str:
    return f"{symbol.name}@{symbol.version}" if symbol.version else symbol.name

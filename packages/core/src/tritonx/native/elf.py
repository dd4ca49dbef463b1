"""Read what a shared library declares to the dynamic loader, without loading it.

pyelftools parses the headers, the dynamic section and the symbol-version tables. The dynamic symbol
table itself is scanned with :mod:`struct`: libtriton.so exports ~136,000 symbols and pyelftools'
per-symbol objects would take seconds, while the scan takes a few hundred milliseconds at most.
"""

from __future__ import annotations

import functools
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from ._trust import open_regular

_SHN_UNDEF = 0
_STB_LOCAL, _STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE = 0, 1, 2, 10
_VERSYM_HIDDEN = 0x8000
_VERSYM_INDEX = 0x7FFF
#: Version name given to definitions in libraries without version tables: any versioned reference
#: binds to them (glibc's rule).
ANY_VERSION = ""


class ElfFormatError(Exception):
    """The file is not a well-formed ELF file (the message says what is wrong)."""


@dataclass(frozen=True)
class ElfHeader:
    """The identity of an ELF file: what machine and what kind of object it is for."""

    elf_class: str  # "ELFCLASS64"
    data: str  # "ELFDATA2LSB"
    machine: str  # "EM_X86_64"
    type: str  # "ET_DYN"

    def describe(self) -> str:
        bits = {"ELFCLASS64": "64-bit", "ELFCLASS32": "32-bit"}.get(self.elf_class, self.elf_class)
        endian = {"ELFDATA2LSB": "little-endian", "ELFDATA2MSB": "big-endian"}.get(self.data, self.data)
        return f"{self.machine.removeprefix('EM_')} {bits} {endian} {self.type}"

    def same_machine(self, other: ElfHeader) -> bool:
        return (self.elf_class, self.data, self.machine) == (other.elf_class, other.data, other.machine)


@dataclass(frozen=True)
class UndefinedSymbol:
    """A dynamic symbol a library needs from elsewhere."""

    name: str
    version: str | None  # "GLIBC_2.14" for a versioned reference, None for a plain one
    weak: bool


@dataclass
class DynamicInfo:
    """The dynamic-section entries that decide which libraries get loaded with this one."""

    needed: list[str] = field(default_factory=list)
    rpath: list[str] = field(default_factory=list)
    runpath: list[str] = field(default_factory=list)
    soname: str | None = None


def _check_within_file(elf: ELFFile, size: int) -> None:
    """Raise ElfFormatError when a header, section or segment points past the end of the file."""
    shoff, shnum, shentsize = elf["e_shoff"], elf["e_shnum"], elf["e_shentsize"]
    if shoff + shnum * shentsize > size:
        raise ElfFormatError(
            f"the file is truncated: its section headers end at byte {shoff + shnum * shentsize}, the file has {size}"
        )
    phoff, phnum, phentsize = elf["e_phoff"], elf["e_phnum"], elf["e_phentsize"]
    if phoff + phnum * phentsize > size:
        raise ElfFormatError(f"the file is truncated: its program headers end past byte {size}")
    for segment in elf.iter_segments():
        end = segment["p_offset"] + segment["p_filesz"]
        if end > size:
            raise ElfFormatError(
                f"the file is truncated: segment {segment['p_type']} ends at byte {end}, file has {size}"
            )
    for section in elf.iter_sections():
        if section["sh_type"] == "SHT_NOBITS":
            continue
        end = section["sh_offset"] + section["sh_size"]
        if end > size:
            raise ElfFormatError(
                f"the file is truncated: section {section.name or '?'} ends at byte {end}, file has {size}"
            )


class ElfImage:
    """An open ELF file (use as a context manager). Construction validates the file's structure."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._stream: BinaryIO = open_regular(self.path)
        try:
            size = os.fstat(self._stream.fileno()).st_size
            if size == 0:
                raise ElfFormatError("the file is empty")
            magic = self._stream.read(4)
            self._stream.seek(0)
            if magic != b"\x7fELF":
                raise ElfFormatError(f"no ELF magic number (first bytes {magic!r})")
            try:
                self.elf = ELFFile(self._stream)
                _check_within_file(self.elf, size)
            except ElfFormatError:
                raise
            except (ELFError, struct.error, ValueError, KeyError, OSError) as exc:
                raise ElfFormatError(f"malformed ELF file: {exc}") from exc
            ident = self.elf["e_ident"]
            self.header = ElfHeader(
                ident["EI_CLASS"], ident["EI_DATA"], str(self.elf["e_machine"]), str(self.elf["e_type"])
            )
        except BaseException:
            self._stream.close()
            raise

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> ElfImage:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- dynamic section ---------------------------------------------------------------------------

    def dynamic(self) -> DynamicInfo:
        info = DynamicInfo()
        section = self.elf.get_section_by_name(".dynamic")
        if section is None:
            for candidate in self.elf.iter_sections():
                if candidate["sh_type"] == "SHT_DYNAMIC":
                    section = candidate
                    break
        if section is None:
            return info
        for tag in section.iter_tags():
            kind = tag.entry.d_tag
            if kind == "DT_NEEDED":
                info.needed.append(tag.needed)
            elif kind == "DT_RPATH":
                info.rpath.extend(p for p in tag.rpath.split(":") if p)
            elif kind == "DT_RUNPATH":
                info.runpath.extend(p for p in tag.runpath.split(":") if p)
            elif kind == "DT_SONAME":
                info.soname = tag.soname
        return info

    # -- dynamic symbols ---------------------------------------------------------------------------

    def _section_of_type(self, sh_type: str):
        for section in self.elf.iter_sections():
            if section["sh_type"] == sh_type:
                return section
        return None

    def _read(self, offset: int, size: int) -> bytes:
        self._stream.seek(offset)
        return self._stream.read(size)

    def _version_names(self) -> tuple[dict[int, str], dict[int, str]]:
        """(index -> version name for definitions, index -> version name for references)."""
        defined: dict[int, str] = {}
        needed: dict[int, str] = {}
        verdef = self._section_of_type("SHT_GNU_verdef")
        if verdef is not None:
            for entry, aux in verdef.iter_versions():
                names = [a.name for a in aux]
                if names and not entry["vd_flags"] & 0x1:  # VER_FLG_BASE names the file, not a version
                    defined[entry["vd_ndx"]] = names[0]
        verneed = self._section_of_type("SHT_GNU_verneed")
        if verneed is not None:
            for _entry, aux in verneed.iter_versions():
                for a in aux:
                    needed[a["vna_other"]] = a.name
        return defined, needed

    def _raw_symbols(self) -> Iterator[tuple[bytes, int, int, int]]:
        """Yield ``(name, binding, section index, versym)`` for each dynamic symbol."""
        dynsym = self._section_of_type("SHT_DYNSYM")
        if dynsym is None:
            return
        strtab = self.elf.get_section(dynsym["sh_link"])
        names = self._read(strtab["sh_offset"], strtab["sh_size"])
        table = self._read(dynsym["sh_offset"], dynsym["sh_size"])
        endian = "<" if self.header.data == "ELFDATA2LSB" else ">"
        if self.header.elf_class == "ELFCLASS64":
            fmt, name_i, info_i, shndx_i = endian + "IBBHQQ", 0, 1, 3
        else:
            fmt, name_i, info_i, shndx_i = endian + "IIIBBH", 0, 3, 5
        entsize = struct.calcsize(fmt)
        count = len(table) // entsize
        versym_section = self._section_of_type("SHT_GNU_versym")
        if versym_section is not None:
            raw = self._read(versym_section["sh_offset"], versym_section["sh_size"])
            versyms = struct.unpack(f"{endian}{len(raw) // 2}H", raw[: (len(raw) // 2) * 2])
        else:
            versyms = ()
        for index, entry in enumerate(struct.iter_unpack(fmt, table[: count * entsize])):
            if index == 0:
                continue
            start = entry[name_i]
            end = names.find(b"\0", start)
            versym = versyms[index] if index < len(versyms) else 1
            yield names[start : end if end >= 0 else len(names)], entry[info_i] >> 4, entry[shndx_i], versym

    def has_versions(self) -> bool:
        return self._section_of_type("SHT_GNU_versym") is not None

    def undefined_symbols(self) -> list[UndefinedSymbol]:
        """Symbols this library needs from the libraries loaded with it."""
        _defined, needed = self._version_names()
        result = []
        for name, binding, shndx, versym in self._raw_symbols():
            if shndx != _SHN_UNDEF or binding == _STB_LOCAL or not name:
                continue
            version = needed.get(versym & _VERSYM_INDEX)
            result.append(UndefinedSymbol(name.decode("utf-8", "replace"), version, binding == _STB_WEAK))
        return result

    def exported_symbols(self, wanted: set[str] | None = None) -> dict[str, set[str]]:
        """Defined global/weak dynamic symbols -> the version names they are defined with.

        Unversioned definitions (and all definitions of a library without version tables) carry
        :data:`ANY_VERSION`. ``wanted`` restricts the (costly) decoding to the names asked for.
        """
        wanted_bytes = None if wanted is None else {w.encode() for w in wanted}
        defined, _needed = self._version_names()
        versioned = self.has_versions()
        result: dict[str, set[str]] = {}
        for name, binding, shndx, versym in self._raw_symbols():
            if shndx == _SHN_UNDEF or binding not in (_STB_GLOBAL, _STB_WEAK, _STB_GNU_UNIQUE):
                continue
            if wanted_bytes is not None and name not in wanted_bytes:
                continue
            version = defined.get(versym & _VERSYM_INDEX) if versioned else None
            result.setdefault(name.decode("utf-8", "replace"), set()).add(version or ANY_VERSION)
        return result

    def exports(self, symbol: str) -> bool:
        return symbol in self.exported_symbols({symbol})


def read_header_quick(path: str) -> ElfHeader | None:
    """The header of ``path`` from its first 20 bytes, or None if it is not ELF (for library search)."""
    try:
        with open_regular(path) as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    elf_class = {1: "ELFCLASS32", 2: "ELFCLASS64"}.get(head[4], f"class{head[4]}")
    data = {1: "ELFDATA2LSB", 2: "ELFDATA2MSB"}.get(head[5], f"data{head[5]}")
    endian = "<" if head[5] == 1 else ">"
    e_type, e_machine = struct.unpack(endian + "HH", head[16:20])
    return ElfHeader(elf_class, data, _MACHINES.get(e_machine, f"EM_{e_machine}"), _TYPES.get(e_type, f"ET_{e_type}"))


_MACHINES = {3: "EM_386", 40: "EM_ARM", 62: "EM_X86_64", 183: "EM_AARCH64", 243: "EM_RISCV", 21: "EM_PPC64"}
_TYPES = {1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}


@functools.lru_cache(maxsize=1)
def host_header() -> ElfHeader:
    """The ELF identity of the running Python interpreter: what a loadable library must match."""
    executable = os.path.realpath(sys.executable)
    with ElfImage(executable) as image:
        return ElfHeader(image.header.elf_class, image.header.data, image.header.machine, "ET_DYN")

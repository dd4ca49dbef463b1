"""Every environment variable tritonx reads, typed, in one place (modelled on Triton's ``knobs``).

Why one module: each variable used to be read where it was needed, with its own rule for "true" and its
own way of splitting a list, so two readers of one variable could disagree. Here each variable is one
field with one parser; the rest of tritonx (and utlx, whose own fields build on the field types defined
here) reads ``settings.<field>`` and never ``os.environ``. The one exception is the start-up shim
(``tritonx._startup`` and the ``tritonx-native.pth`` line), which runs before any package can be
imported and reads ``TRITONX_NATIVE_PLUGINS``/``TRITONX_CACHE_DIR`` itself.

A field reads the environment each time it is asked (tests and users may change a variable between
calls), unless code set it: ``settings.plugins = ...`` overrides the environment for this process until
``del settings.plugins``. ``with settings.scope(): ...`` undoes every override and environment change of
the block (for tests). ``README.md``'s environment table lists every field of both packages; a test
keeps the two in step.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: Spellings of a boolean variable, compared case-insensitively; empty or unset means the default.
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


#: what :meth:`Settings.raw` shows instead of a secret field's value
SECRET_MASK = "<set>"


class SettingsError(ValueError):
    """An environment variable holds a value its setting cannot parse; the message names the variable."""


def parse_bool(text: str | None, *, default: bool, var: str) -> bool:
    """The one rule for boolean variables: 1/true/yes/on, 0/false/no/off, empty or unset = ``default``."""
    if text is None or not text.strip():
        return default
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingsError(f"{var}={text!r} is not a boolean: use one of {', '.join(TRUE_WORDS + FALSE_WORDS)}")


def parse_list(text: str | None, *, sep: str) -> tuple[str, ...]:
    """The one rule for list variables: split on ``sep``, strip each item, drop empty ones."""
    if text is None:
        return ()
    return tuple(item.strip() for item in text.split(sep) if item.strip())


class Field(Generic[T]):
    """One environment-backed setting: a descriptor on a :class:`Settings` class."""

    def __init__(self, var: str, doc: str) -> None:
        self.var = var
        self.doc = doc
        self.name = var

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        if self.name in obj.__dict__:
            return obj.__dict__[self.name]
        return self.parse(os.environ.get(self.var))

    def __set__(self, obj: Any, value: T) -> None:
        obj.__dict__[self.name] = value

    def __delete__(self, obj: Any) -> None:
        obj.__dict__.pop(self.name, None)

    def parse(self, text: str | None) -> T:
        raise NotImplementedError

    def default_text(self) -> str:
        """How the default reads in the environment table."""
        raise NotImplementedError


class BoolField(Field[bool]):
    def __init__(self, var: str, default: bool, doc: str) -> None:
        super().__init__(var, doc)
        self.default = default

    def parse(self, text: str | None) -> bool:
        return parse_bool(text, default=self.default, var=self.var)

    def default_text(self) -> str:
        return "1" if self.default else "0"


class StrField(Field["str | None"]):
    """Text as given (stripped); None when unset or empty, or ``default`` when one is given.

    ``secret`` fields (passwords, signing keys) are masked by :meth:`Settings.raw`: what it returns is printed
    and logged (``tritonx doctor``, bug reports), and a credential must not travel that way."""

    def __init__(self, var: str, doc: str, default: str | None = None, *, secret: bool = False) -> None:
        super().__init__(var, doc)
        self.default = default
        self.secret = secret

    def parse(self, text: str | None) -> str | None:
        if text is None or not text.strip():
            return self.default
        return text.strip()

    def default_text(self) -> str:
        return self.default or "unset"


class FloatField(Field[float]):
    """A number; NaN is always refused, and so is a value below ``minimum`` when one is given (a negative
    budget or timeout is a mistake, not a request), whether it comes from the environment or is assigned."""

    def __init__(self, var: str, default: float, doc: str, *, minimum: float | None = None) -> None:
        super().__init__(var, doc)
        self.default = default
        self.minimum = minimum

    def parse(self, text: str | None) -> float:
        if text is None or not text.strip():
            return self.default
        try:
            value = float(text)
        except ValueError:
            raise SettingsError(f"{self.var}={text!r} is not a number") from None
        return self._checked(value, text)

    def __set__(self, obj: Any, value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SettingsError(f"{self.var} (settings.{self.name}) must be a number, got {value!r}")
        super().__set__(obj, self._checked(float(value), repr(value)))

    def _checked(self, value: float, text: str) -> float:
        if math.isnan(value):
            raise SettingsError(f"{self.var}={text!r} is not a number (NaN)")
        if self.minimum is not None and value < self.minimum:
            raise SettingsError(f"{self.var}={text!r} must be >= {self.minimum:g}")
        return value

    def default_text(self) -> str:
        return f"{self.default:g}"


class IntField(Field[int]):
    def __init__(self, var: str, default: int, doc: str) -> None:
        super().__init__(var, doc)
        self.default = default

    def parse(self, text: str | None) -> int:
        if text is None or not text.strip():
            return self.default
        try:
            return int(text)
        except ValueError:
            raise SettingsError(f"{self.var}={text!r} is not an integer") from None

    def default_text(self) -> str:
        return str(self.default)


class ListField(Field["tuple[str, ...]"]):
    def __init__(self, var: str, sep: str, doc: str) -> None:
        super().__init__(var, doc)
        self.sep = sep

    def parse(self, text: str | None) -> tuple[str, ...]:
        return parse_list(text, sep=self.sep)

    def default_text(self) -> str:
        return "empty"


class ParsedField(Field[T]):
    """A variable with its own grammar (``TRITONX_PLUGINS``): ``parser(text_or_None)``."""

    def __init__(self, var: str, parser: Callable[[str | None], T], doc: str, default: str = "unset") -> None:
        super().__init__(var, doc)
        self._parser = parser
        self._default = default

    def parse(self, text: str | None) -> T:
        return self._parser(text)

    def default_text(self) -> str:
        return self._default


@dataclass(frozen=True)
class PluginChoice:
    """``TRITONX_PLUGINS`` parsed: which plugins the environment asks for.

    ``mode`` is ``"default"`` (unset or empty: the plugins that declare ``default_enabled``), ``"none"``,
    ``"all"`` or ``"names"`` (a comma-separated list, kept in ``names``).
    """

    mode: str
    names: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> PluginChoice:
        if text is None or not text.strip():
            return cls("default")
        word = text.strip().lower()
        if word in ("none", "all"):
            return cls(word)
        return cls("names", parse_list(text, sep=","))

    def allows(self, name: str, *, default_enabled: bool) -> bool:
        """Would this choice enable the plugin ``name``?"""
        if self.mode == "default":
            return default_enabled
        if self.mode == "names":
            return name in self.names
        return self.mode == "all"


class Settings:
    """Base of a package's settings object: env-backed fields, overrides, and ``scope()``."""

    @classmethod
    def fields(cls) -> dict[str, Field[Any]]:
        """Every field, by attribute name (base classes' first)."""
        found: dict[str, Field[Any]] = {}
        for klass in reversed(cls.__mro__):
            found.update({k: v for k, v in vars(klass).items() if isinstance(v, Field)})
        return found

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Undo, on exit, every override set and every field's variable changed inside the block."""
        saved_env = {f.var: os.environ.get(f.var) for f in self.fields().values()}
        saved = dict(self.__dict__)
        try:
            yield
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)
            for var, value in saved_env.items():
                if value is None:
                    os.environ.pop(var, None)
                else:
                    os.environ[var] = value

    def raw(self) -> dict[str, str | None]:
        """Every field's variable as the environment holds it (for ``tritonx doctor``); a set secret field reads
        ``"<set>"``, never its value."""
        out: dict[str, str | None] = {}
        for f in self.fields().values():
            value = os.environ.get(f.var)
            out[f.var] = SECRET_MASK if value is not None and getattr(f, "secret", False) else value
        return out


class TritonxSettings(Settings):
    """The variables tritonx-core reads (and the Triton/system ones it must read too)."""

    plugins = ParsedField(
        "TRITONX_PLUGINS", PluginChoice.parse, default="the plugins that are on by default (utlx)",
        doc="which plugins `tritonx.apply_environment()` enables: names (comma-separated), `all`, `none`")
    native_plugins = ListField(
        "TRITONX_NATIVE_PLUGINS", ":",
        doc="native `.so` plugins (colon-separated) checked in an isolated child process and loaded at interpreter "
            "start-up (Triton 3.7+); refused ones print one warning and are left out; each library's verdict is "
            "remembered per (path, content hash, Triton install)")
    cache_dir = ParsedField(
        "TRITONX_CACHE_DIR", lambda text: text if text else settings.user_cache_dir("tritonx"),
        default="`$XDG_CACHE_HOME/tritonx`, else `~/.cache/tritonx`",
        doc="where tritonx keeps those native-plugin verdicts (the start-up shim reads it itself)")
    debug = BoolField(
        "TRITONX_DEBUG", False, doc="the `tritonx` CLI shows tracebacks and the compiler's raw output on errors "
                                    "(as `--debug` does)")
    triton_interpret = StrField(
        "TRITON_INTERPRET",
        doc="Triton's own switch to its CPU interpreter; `tritonx doctor` reports it, and utlx asks Triton "
            "(`triton.knobs.runtime.interpret`) whether it is on")
    triton_plugin_paths = ListField(
        "TRITON_PLUGIN_PATHS", ":",
        doc="Triton 3.7/3.8's own list of native plugins, read once when libtriton is imported; tritonx appends "
            "the native plugins it accepted (set it through `TRITONX_NATIVE_PLUGINS` instead)")
    xdg_cache_home = StrField(
        "XDG_CACHE_HOME", doc="the base of the default cache folders (`~/.cache` when unset)")
    ld_library_path = ListField(
        "LD_LIBRARY_PATH", ":", doc="the dynamic loader's search path, followed when checking a native plugin's "
                                    "dependencies as `ld.so` would")
    # The Redis remote cache (`tritonx.compat.cache:RedisBackend`; host, port and key format are Triton's own
    # `TRITON_REDIS_HOST`/`_PORT`/`_KEY_FORMAT`). The remote cache only ever speeds a compile up: on any error
    # the compile goes on locally.
    redis_connect_timeout = FloatField(
        "TRITONX_REDIS_CONNECT_TIMEOUT", 1.0,
        doc="seconds the Redis remote cache may take to connect before the compile goes on without it")
    redis_timeout = FloatField(
        "TRITONX_REDIS_TIMEOUT", 2.0,
        doc="seconds one Redis remote-cache read or write may take (a frozen server costs at most this per call "
            "until the breaker opens)")
    redis_breaker_failures = IntField(
        "TRITONX_REDIS_BREAKER_FAILURES", 3,
        doc="failed Redis remote-cache calls in a row after which the process stops calling the server (compiles "
            "stay local) until the cool-down has passed")
    redis_breaker_cooldown = FloatField(
        "TRITONX_REDIS_BREAKER_COOLDOWN", 30.0,
        doc="seconds the Redis remote cache stays off after the breaker opened; then one call tries the server again")
    redis_username = StrField("TRITONX_REDIS_USERNAME", doc="the Redis remote cache's AUTH user name (Redis 6 ACLs)")
    redis_password = StrField("TRITONX_REDIS_PASSWORD", doc="the Redis remote cache's AUTH password", secret=True)
    redis_tls = BoolField("TRITONX_REDIS_TLS", False, doc="the Redis remote cache connects over TLS")
    redis_tls_ca_certs = StrField(
        "TRITONX_REDIS_TLS_CA_CERTS", doc="CA bundle the Redis server's TLS certificate is checked against (the "
                                          "system's when unset)")
    redis_tls_certfile = StrField("TRITONX_REDIS_TLS_CERTFILE", doc="client certificate for the Redis server's TLS")
    redis_tls_keyfile = StrField("TRITONX_REDIS_TLS_KEYFILE", doc="private key of that client certificate")
    redis_secret = StrField(
        "TRITONX_REDIS_SECRET",
        doc="when set, Redis remote-cache entries are signed with it (HMAC-SHA256) and entries without a valid "
            "signature are ignored: only processes knowing it can fill the cache", secret=True)

    def user_cache_dir(self, package: str) -> str:
        """``$XDG_CACHE_HOME/<package>``, else ``~/.cache/<package>`` (a package's default cache folder)."""
        return os.path.join(self.xdg_cache_home or os.path.join(os.path.expanduser("~"), ".cache"), package)

    def add_triton_plugin_path(self, path: str) -> bool:
        """Append ``path`` to ``TRITON_PLUGIN_PATHS`` in the environment (libtriton 3.7/3.8 reads it there)."""
        current = list(self.triton_plugin_paths)
        if path in current:
            return False
        os.environ[type(self).triton_plugin_paths.var] = ":".join([*current, path])
        return True

    @staticmethod
    def child_environment(drop: tuple[str, ...] = ()) -> dict[str, str]:
        """This process's environment for a child process, less the variables named in ``drop``."""
        env = dict(os.environ)
        for var in drop:
            env.pop(var, None)
        return env


#: The process's tritonx settings.
settings = TritonxSettings()

#: The public surface: plugins (utlx among them) declare their own settings with these field types and
#: read tritonx's through ``settings``.
__all__ = ["FALSE_WORDS", "TRUE_WORDS", "BoolField", "Field", "FloatField", "IntField", "ListField", "ParsedField",
           "PluginChoice", "Settings", "SettingsError", "StrField", "TritonxSettings", "parse_bool", "parse_list",
           "settings"]

"""The format of a remote-cache entry: the payload under a header that says what it is.

Why: a remote cache is shared, so what comes back under a key may not be what this key stored: an
entry copied from another key, one written by another tool (stock Triton's backend writes bare bytes),
a truncated write, or something planted. Every entry carries the key and file name it was stored for
and the SHA-256 of its payload (and, when a secret is configured, an HMAC-SHA256 of all three under
it); :func:`open_entry` returns the payload only when all of them match, else the reason it does not.

Layout: ``MAGIC`` + one JSON line (``key``, ``file``, ``size``, ``sha256``, optionally ``hmac``) + payload.
"""

from __future__ import annotations

import hashlib
import hmac
import json

MAGIC = b"tritonx-remote-cache/1\n"

#: Why an entry was refused (the reasons :func:`open_entry` gives).
FOREIGN, MISMATCHED, CORRUPT, UNSIGNED = "foreign", "mismatched", "corrupt", "unsigned"


def _mac(secret: str, key: str, filename: str, payload: bytes) -> str:
    message = json.dumps([key, filename]).encode("utf-8") + b"\n" + payload
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def seal(key: str, filename: str, payload: bytes, secret: str | None = None) -> bytes:
    """The stored form of ``payload``, for cache key ``key`` and file ``filename``."""
    header = {"key": key, "file": filename, "size": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    if secret:
        header["hmac"] = _mac(secret, key, filename, payload)
    return MAGIC + json.dumps(header, sort_keys=True).encode("utf-8") + b"\n" + payload


def open_entry(key: str, filename: str, blob: bytes, secret: str | None = None) -> tuple[bytes | None, str | None]:
    """``(payload, None)`` when ``blob`` is a sound entry for ``key``/``filename``, else ``(None, reason)``."""
    if not isinstance(blob, bytes) or not blob.startswith(MAGIC):
        return None, FOREIGN
    end = blob.find(b"\n", len(MAGIC))
    try:
        header = json.loads(blob[len(MAGIC):end]) if end > 0 else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        return None, CORRUPT
    if header.get("key") != key or header.get("file") != filename:
        return None, MISMATCHED
    payload = blob[end + 1:]
    if header.get("size") != len(payload) or header.get("sha256") != hashlib.sha256(payload).hexdigest():
        return None, CORRUPT
    if secret:
        mac = header.get("hmac")
        if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(secret, key, filename, payload)):
            return None, UNSIGNED
    return payload, None

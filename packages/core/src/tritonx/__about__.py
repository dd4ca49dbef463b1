"""Version of the tritonx-core distribution (released on its own)."""

__version__ = "0.1.0"

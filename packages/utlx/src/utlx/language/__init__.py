"""The utlx op surface (TLX names and signatures); op bodies are routed by ``_dispatch``."""

from utlx.language._dispatch import dispatch, register_compiler_impl, register_interpreter_impl

__all__ = ["dispatch", "register_compiler_impl", "register_interpreter_impl"]

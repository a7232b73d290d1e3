"""`python -m llama_cpp.server`, with llama.cpp's extra CPU buffer types off.

llama.cpp repacks weights for the CPU's widest kernels (AMX, AVX-512) when it finds them; on a
virtual machine that reports AMX without granting it, the first batch of a prompt ends in a general
protection fault (seen with llama-cpp-python 0.3.36 built on such a machine). llama.cpp's own
`--no-repack` sets `use_extra_bufts` off; llama-cpp-python's server has no such option, so this
launcher sets it in the default model parameters and then runs the server with the arguments given.
"""

from __future__ import annotations

import runpy
import sys

import llama_cpp.llama_cpp as native

_defaults = native.llama_model_default_params


def _without_extra_buffers():  # type: ignore[no-untyped-def]
    params = _defaults()
    params.use_extra_bufts = False
    return params


if __name__ == "__main__":
    native.llama_model_default_params = _without_extra_buffers
    sys.argv[0] = "llama_cpp.server"
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)

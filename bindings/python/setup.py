# SPDX-License-Identifier: MIT
# The metadata is in pyproject.toml; this file only hooks in the cffi
# extension (which compiles the library's sources from the clone).
from setuptools import setup

setup(cffi_modules=["shmlog_build.py:ffibuilder"])

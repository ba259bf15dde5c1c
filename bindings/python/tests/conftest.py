# SPDX-License-Identifier: MIT
import itertools
import os

import pytest

import shmlog

_n = itertools.count()


@pytest.fixture
def bufname():
    """A buffer name no other test (or engineer) uses; removed afterwards."""
    name = "test-py-%d-%d" % (os.getpid(), next(_n))
    yield name
    try:
        shmlog.remove(name)
    except FileNotFoundError:
        pass

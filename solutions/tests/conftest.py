"""Shared fixtures: one pool of gloo workers per world size, started once per test session."""

from __future__ import annotations

import os

import pytest

from minddp.workers import WorkerPool

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))


def _pool(world_size: int):
    with WorkerPool(world_size, pythonpath=[TESTS_DIR]) as pool:
        yield pool


@pytest.fixture(scope="session")
def pool2():
    """Two gloo workers (started on first use, restarted by the pool after a failure)."""
    yield from _pool(2)


@pytest.fixture(scope="session")
def pool3():
    yield from _pool(3)


def pytest_collection_modifyitems(items):
    for item in items:
        if {"pool2", "pool3"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.workers)

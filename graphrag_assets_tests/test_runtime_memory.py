"""What a process that waits on step processes gives back (pipeline/runtime/memory.py), and the step
server's imported objects left out of its steps' garbage collections (step_server_last.py)."""

from __future__ import annotations

import ctypes
import gc
import multiprocessing
import platform
from pathlib import Path

import pytest

from graphrag_assets.core import tokens
from graphrag_assets.pipeline.runtime.memory import give_back_memory
from graphrag_assets.pipeline.runtime.step_server import START_METHOD, start_step_server

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
BLOCK = 64 << 10  # below glibc's mmap threshold: served from the heap, kept there when freed
BLOCKS = 1600  # 100 MB


def resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's")
def test_heap_memory_freed_below_a_live_block_goes_back_to_the_system() -> None:
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        ctypes.memset(block, 1, BLOCK)  # resident
    for block in blocks[:-1]:  # the last block stays: the heap's top cannot shrink on its own
        libc.free(block)
    before = resident_mb()
    assert give_back_memory()
    after = resident_mb()
    libc.free(blocks[-1])
    assert before - after > 50, f"{before:.0f} MB resident before, {after:.0f} MB after"


def test_the_cached_tokenizers_are_dropped() -> None:
    tokens.get_tokenizer("cl100k_base")
    give_back_memory()
    assert tokens.get_tokenizer.cache_info().currsize == 0


def test_a_step_finds_the_servers_imports_frozen() -> None:
    start_step_server(["json"])
    with multiprocessing.get_context(START_METHOD).Pool(1) as pool:
        frozen = pool.apply(gc.get_freeze_count)
    assert frozen > 1000

"""Giving memory back to the system before this process waits on steps that run in other processes.

On a big corpus ``index`` runs the document job in its own process, then waits while each corpus
step runs in a process of its own (:mod:`graphrag_assets.pipeline.corpus_processes`), its memory
summed with theirs the whole time. Part of what the document job freed stays with the C allocator
(glibc returns freed memory only from the top of a heap, and only past its trim threshold), and the
tokenizers the chunking loaded stay cached. Dropping the tokenizers, collecting, and
``malloc_trim(0)`` (which returns the free pages in the middle of every arena as well) took the
process from 371 to 340 MB at 20,000 generated documents, and from about 455 to 424 MB at 100,000,
where it then stayed through the corpus run (one run each, 2026-12-06). The rest is the imports
(~180 MB), the libraries' code pages the document job touched and Python's own partly used arenas.
A tokenizer needed again is loaded again (0.2-0.3 s); the steps load their own.
"""

from __future__ import annotations

import ctypes
import gc

from graphrag_assets.core.tokens import release_tokenizers


def give_back_memory() -> bool:
    """Drop the cached tokenizers, collect cyclic garbage and return the C allocator's free pages to
    the system; True when the C library had ``malloc_trim`` (glibc), False elsewhere (macOS, musl)."""
    release_tokenizers()
    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = (ctypes.c_size_t,)
    trim(0)
    return True

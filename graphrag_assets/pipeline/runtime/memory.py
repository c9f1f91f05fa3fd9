"""Giving memory back to the system before this process waits on steps that run in other processes.

On a big corpus ``index`` runs the document job in its own process and then waits for hours'
worth of corpus steps, each in a process of its own (:mod:`graphrag_assets.pipeline.corpus_processes`);
its memory is summed with theirs the whole time. What the document job freed is mostly kept by
the C allocator (glibc returns freed memory only from the top of a heap, and only past its trim
threshold), and the tokenizers the chunking loaded stay cached. At 20,000 generated documents the
process held 371 MB when the corpus run began; dropping the tokenizers, collecting, and
``malloc_trim(0)`` (which returns the free pages in the middle of every arena as well) brought it to
340 MB (1 run). A tokenizer needed again is loaded again (0.1 s); the steps load their own.
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

"""Imported first by the step server (:mod:`.step_server`), before any library, and by nothing else.

DuckDB decides when it is imported whether the process is an interactive session: one whose
``__main__`` has no file. It then prints a progress bar on stdout for long queries (at 20,000
documents it landed in the middle of ``index --json``'s output). The fork server runs the ``-c``
program of :mod:`multiprocessing.forkserver`; naming that module's file as ``__main__``'s makes
the server, and every step forked from it, the script it is, as ``index`` is.
"""

import multiprocessing.forkserver
import sys

_main = sys.modules["__main__"]
if not getattr(_main, "__file__", None):
    _main.__file__ = multiprocessing.forkserver.__file__

"""Run the ``graphrag-assets`` command line with a fault inside the corpus publish.

``python -m graphrag_assets_tests.publish_fault <fault> <cli arguments...>`` runs the command with
the publish's DuckDB connection wrapped: at the second ``alter table`` (the second staged table
renamed into place, inside the publish transaction) it either raises (``raise``) or kills its own
process with SIGKILL (``kill``: a power cut or an OOM kill in the middle of the commit). The
production code is untouched; only the connection it is handed is wrapped.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from graphrag_assets.storage import corpus

FAULT_AT = 2  # the second rename: one table is renamed already, the others are not


class PublishFault(RuntimeError):
    """The fault injected into the publish."""


class FaultyConnection:
    """A DuckDB connection whose ``execute`` fails at the ``FAULT_AT``-th ``alter table``."""

    def __init__(self, conn, fault: str) -> None:
        self._conn = conn
        self._fault = fault
        self._renames = 0

    def execute(self, sql: str, *args, **kwargs):
        if sql.lstrip().lower().startswith("alter table"):
            self._renames += 1
            if self._renames == FAULT_AT:
                if self._fault == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise PublishFault(f"injected fault at rename {self._renames}")
        return self._conn.execute(sql, *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


def faulty_connect(fault: str):
    """A replacement for ``corpus.connect`` whose connections fail inside the publish."""
    real = corpus.connect

    @contextlib.contextmanager
    def connect(path, **kwargs):
        with real(path, **kwargs) as conn:
            yield FaultyConnection(conn, fault)

    return connect


def main() -> None:
    fault, arguments = sys.argv[1], sys.argv[2:]
    corpus.connect = faulty_connect(fault)
    from graphrag_assets.cli.main import main as cli

    sys.argv = ["graphrag-assets", *arguments]
    cli()


if __name__ == "__main__":
    main()

"""Run the ``graphrag-assets`` command line with a fault at a chosen database statement.

``python -m graphrag_assets_testkit.publish_fault <fault> <pattern> <n> <cli arguments...>`` runs the
command with every DuckDB connection of the product wrapped: just before the ``n``-th statement
(counted over the whole process) that starts with ``pattern`` it raises (``raise``) or kills its own
process with SIGKILL (``kill``: a power cut or an OOM kill at that point). ``alter table`` 2 is
inside the publish transaction, after its first rename. The production code is untouched; only
the connections it is handed are wrapped. ``step-raise`` and ``step-kill`` put the fault in the
corpus steps' own processes instead (``index.corpus_processes``), the ``index`` process left
alone: the step server imports this module, which wraps the connections of the processes it
forks from the fault in ``$GRAPHRAG_TEST_FAULT``; there the statements are counted per step process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from graphrag_assets.storage import database

IN_THE_PUBLISH = ("alter table", 2)  # the second staged table renamed into place: one is renamed already
FAULT_VARIABLE = "GRAPHRAG_TEST_FAULT"  # "fault pattern occurrence", for the step processes
THIS_MODULE = "graphrag_assets_testkit.publish_fault"
STEP_FAULT = "step-"  # the prefix of a fault meant for the corpus steps' own processes


class PublishFault(RuntimeError):
    """The fault injected."""


class FaultPoint:
    """Counts the statements starting with ``pattern``; fails at the ``occurrence``-th one."""

    def __init__(self, fault: str, pattern: str, occurrence: int) -> None:
        self.fault, self.pattern, self.occurrence, self.seen = fault, pattern.lower(), occurrence, 0

    def check(self, sql: str) -> None:
        if not sql.lstrip().lower().startswith(self.pattern):
            return
        self.seen += 1
        if self.seen == self.occurrence:
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            raise PublishFault(f"injected fault at {self.pattern!r} {self.seen}")


class FaultyConnection:
    """A DuckDB connection whose ``execute`` passes every statement by the fault point first."""

    def __init__(self, conn, point: FaultPoint) -> None:
        self._conn = conn
        self._point = point

    def execute(self, sql: str, *args, **kwargs):
        self._point.check(sql)
        return self._conn.execute(sql, *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self._conn, name)


def faulty_connect(real, fault: str, pattern: str = IN_THE_PUBLISH[0], occurrence: int = IN_THE_PUBLISH[1]):
    """A replacement for ``connect`` whose connections fail at the fault point."""
    point = FaultPoint(fault, pattern, occurrence)

    @contextlib.contextmanager
    def connect(path, **kwargs):
        with real(path, **kwargs) as conn:
            yield FaultyConnection(conn, point)

    return connect


def main() -> None:
    fault, pattern, occurrence, arguments = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    in_steps = fault.startswith(STEP_FAULT)
    if not in_steps:  # before anything imports it by name: every module of the product gets the wrapped connect
        database.connect = faulty_connect(database.connect, fault, pattern, occurrence)
    from graphrag_assets.cli.main import main as cli

    if in_steps:
        from graphrag_assets.pipeline import corpus_processes

        os.environ[FAULT_VARIABLE] = f"{fault.removeprefix(STEP_FAULT)}\t{pattern}\t{occurrence}"
        # imported first by the step server: before the product's modules bind connect
        corpus_processes.STEP_MODULES = (THIS_MODULE, *corpus_processes.STEP_MODULES)

    sys.argv = ["graphrag-assets", *arguments]
    cli()


if __name__ == "__main__":
    main()
elif __name__ == THIS_MODULE and os.environ.get(FAULT_VARIABLE):  # imported by the step server
    _fault, _pattern, _occurrence = os.environ[FAULT_VARIABLE].split("\t")
    database.connect = faulty_connect(database.connect, _fault, _pattern, int(_occurrence))

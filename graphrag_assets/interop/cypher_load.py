"""Load the Cypher export into a running graph database: FalkorDB, or Neo4j over Bolt.

Target URLs:

- ``falkordb://[USER:PASSWORD@]HOST[:PORT][/GRAPH]`` — port 6379 and graph ``graphrag`` by default;
- ``bolt://HOST[:PORT][/DATABASE]`` or ``neo4j://…`` — port 7687, the server's default database;
  user and password from the URL or ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD``. Needs the ``neo4j``
  driver (``pip install 'graphrag-assets[neo4j]'``).

Both run the same statements, the ones the export writes to its files. A target that already holds
our graph is refused unless ``force`` (then FalkorDB's graph is deleted, and in Neo4j the nodes with
our labels are deleted in the loading transaction). A load that fails part-way leaves nothing: the
FalkorDB graph is deleted again, and Neo4j's single data transaction is rolled back.

The client libraries are imported when a load runs, not with this module: ``falkordb`` costs about
0.4 s and the CLI imports the export formats at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from graphrag_assets.core.errors import UserError
from graphrag_assets.interop.cypher import NODE_LABELS

DEFAULT_PORTS = {"falkordb": 6379, "bolt": 7687, "neo4j": 7687}
DEFAULT_GRAPH = "graphrag"
CONNECT_TIMEOUT_SECONDS = 10
_OUR_NODES = " OR ".join(f"n:{label}" for label in NODE_LABELS)
NEO4J_EXISTING = f"MATCH (n) WHERE {_OUR_NODES} RETURN count(n) AS nodes"
NEO4J_DELETE = f"MATCH (n) WHERE {_OUR_NODES} DETACH DELETE n"


@dataclass(frozen=True)
class GraphTarget:
    """Where to load: the engine, the server and the graph (FalkorDB) or database (Neo4j)."""

    scheme: str  # falkordb | bolt | neo4j
    host: str
    port: int
    name: str | None  # FalkorDB graph / Neo4j database (None: the server's default)
    username: str | None = None
    password: str | None = None

    @property
    def display(self) -> str:
        """The URL without credentials, for messages."""
        return f"{self.scheme}://{self.host}:{self.port}" + (f"/{self.name}" if self.name else "")


def parse_target(url: str) -> GraphTarget:
    """The target of ``--load``; a URL of another form is refused with the forms we take."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        raise UserError(f"cannot load into {url!r}; give falkordb://HOST:PORT[/GRAPH] or bolt://HOST:PORT[/DATABASE].")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise UserError(f"the port in {url!r} is not a number between 0 and 65535.") from None
    name = unquote(parts.path.strip("/")) or (DEFAULT_GRAPH if scheme == "falkordb" else None)
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password else None
    if scheme != "falkordb":
        username = username or os.environ.get("NEO4J_USERNAME")
        password = password or os.environ.get("NEO4J_PASSWORD")
    return GraphTarget(scheme, parts.hostname, port, name, username, password)


@dataclass(frozen=True)
class LoadReport:
    """What a load created."""

    target: str
    statements: int
    nodes: int
    relationships: int

    def as_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "statements": self.statements,
            "nodes": self.nodes,
            "relationships": self.relationships,
        }


def load_graph(target: GraphTarget, schema: Sequence[str], statements: Sequence[str], *, force: bool) -> LoadReport:
    """Run the schema, then the data statements, against ``target`` (see the module docstring)."""
    if target.scheme == "falkordb":
        return _load_falkordb(target, schema, statements, force=force)
    return _load_neo4j(target, schema, statements, force=force)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def _load_falkordb(target: GraphTarget, schema: Sequence[str], statements: Sequence[str], *, force: bool) -> LoadReport:
    import redis.exceptions
    from falkordb import FalkorDB

    where = f"FalkorDB at {target.host}:{target.port}"
    try:
        db = FalkorDB(
            host=target.host,
            port=target.port,
            username=target.username,
            password=target.password,
            socket_connect_timeout=CONNECT_TIMEOUT_SECONDS,
        )
        exists = target.name in db.list_graphs()
    except redis.exceptions.ConnectionError as exc:
        raise UserError(f"could not connect to {where} ({_first_line(exc)}); is the server running?") from None
    except redis.exceptions.ResponseError as exc:
        raise UserError(
            f"{where} did not answer as FalkorDB does ({_first_line(exc)}); is the FalkorDB module loaded?"
        ) from None
    if exists and not force:
        raise UserError(f"graph {target.name!r} already exists in {where}; pass --force to replace it.")
    graph = db.select_graph(target.name)
    if exists:
        graph.delete()
    nodes = relationships = 0
    everything = [*schema, *statements]
    for index, statement in enumerate(everything, start=1):
        try:
            result = graph.query(statement)
        except redis.exceptions.RedisError as exc:
            _delete_quietly(graph)
            raise UserError(
                f"{where} refused statement {index} of {len(everything)} ({_first_line(exc)}); the partly loaded "
                f"graph {target.name!r} was deleted."
            ) from None
        nodes += int(result.nodes_created)
        relationships += int(result.relationships_created)
    return LoadReport(target.display, len(everything), nodes, relationships)


def _delete_quietly(graph) -> None:
    try:
        graph.delete()
    except Exception:  # the server may be gone: there is then nothing left to clean either
        pass


def _load_neo4j(target: GraphTarget, schema: Sequence[str], statements: Sequence[str], *, force: bool) -> LoadReport:
    try:
        import neo4j
        from neo4j.exceptions import AuthError, ClientError, Neo4jError, ServiceUnavailable
    except ImportError:
        raise UserError(
            "loading into Neo4j needs its Python driver; install it with: pip install 'graphrag-assets[neo4j]'."
        ) from None
    where = f"Neo4j at {target.host}:{target.port}"
    auth = (target.username or "neo4j", target.password or "") if (target.username or target.password) else None
    driver = neo4j.GraphDatabase.driver(
        f"{target.scheme}://{target.host}:{target.port}", auth=auth, connection_timeout=CONNECT_TIMEOUT_SECONDS
    )
    try:
        try:
            driver.verify_connectivity()
        except (ServiceUnavailable, OSError) as exc:
            raise UserError(f"could not connect to {where} ({_first_line(exc)}); is the server running?") from None
        except AuthError as exc:
            raise UserError(
                f"{where} refused the credentials ({_first_line(exc)}); set NEO4J_USERNAME and NEO4J_PASSWORD."
            ) from None
        with driver.session(database=target.name) as session:
            existing = session.run(NEO4J_EXISTING).single()["nodes"]
            if existing and not force:
                raise UserError(f"{where} already holds {existing} graphrag nodes; pass --force to replace them.")
            for statement in schema:
                try:
                    session.run(statement).consume()
                except ClientError as exc:
                    if exc.code != "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists":
                        raise
            counts = session.execute_write(_neo4j_write, statements, bool(existing))
    except Neo4jError as exc:
        raise UserError(f"{where} refused the load ({_first_line(exc)}); nothing was written.") from None
    finally:
        driver.close()
    return LoadReport(target.display, len(schema) + len(statements), *counts)


def _neo4j_write(tx, statements: Sequence[str], replace: bool) -> tuple[int, int]:
    if replace:
        tx.run(NEO4J_DELETE).consume()
    nodes = relationships = 0
    for statement in statements:
        counters = tx.run(statement).consume().counters
        nodes += counters.nodes_created
        relationships += counters.relationships_created
    return nodes, relationships

"""Any query result as a polars frame whose values print as DuckDB means them.

A user's query can return any DuckDB type, and polars takes some of them badly: an INTERVAL inside
a list, a UNION or an infinite DATE / TIMESTAMP abort the process with a Rust panic; BIT and BIGNUM
(VARINT) arrive as raw bytes; TIME WITH TIME ZONE loses its offset; the largest UHUGEINT values
wrap around. So the result's column types are read first (``relation.types``, without running the
query again) and every column polars does not hold faithfully is converted inside DuckDB: to its
text (DuckDB's own rendering: ``infinity``, ``101``, ``12:00:00+05``, ``[1 day, 02:00:00]``).
HUGEINT arrives as a 38-digit decimal holding the exact 128 bits and becomes polars' Int128.
"""

from __future__ import annotations

import duckdb
import polars as pl
from duckdb.sqltypes import DuckDBPyType

from graphrag_assets.core.errors import UserError
from graphrag_assets.storage.database import frame_of

# Types polars holds as they are. Dates and timestamps are not among them: DuckDB allows
# 'infinity', which polars cannot hold; TIME can only be finite.
NATIVE_TYPES = {
    "boolean",
    "tinyint",
    "smallint",
    "integer",
    "bigint",
    "utinyint",
    "usmallint",
    "uinteger",
    "ubigint",
    "hugeint",
    "float",
    "double",
    "decimal",
    "varchar",
    "uuid",
    "enum",
    "time",
}
NESTED_TYPES = {"list", "array", "struct", "map"}
FLOAT_DIGITS = 15


def readable_frame(relation: duckdb.DuckDBPyRelation, *, nested_as_text: bool = False) -> pl.DataFrame:
    """The relation's rows, with the columns polars would mangle converted inside DuckDB first.

    ``nested_as_text``: lists, structs and maps as text too (CSV has no nested values).
    """
    names = relation.columns
    if len(set(names)) != len(names):
        repeated = sorted({name for name in names if names.count(name) > 1})
        raise UserError(f"the result has more than one column named {', '.join(repeated)}; name them apart with AS.")
    targets = [_target_type(dtype, nested_as_text) for dtype in relation.types]
    if any(targets):
        relation = relation.select(*(_column(i, name, target) for i, (name, target) in enumerate(zip(names, targets))))
    try:
        return _plain_numbers(frame_of(relation))
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException) as exc:
        raise UserError(f"the result could not be converted for printing: {str(exc).splitlines()[0]}") from None


def _plain_numbers(frame: pl.DataFrame) -> pl.DataFrame:
    """Decimals as integers or floats where that keeps every digit, so JSON prints them as numbers.

    ``sum()`` of integers is a HUGEINT and ``2.5`` a DECIMAL(2,1) in DuckDB; as decimals they would
    print as strings in JSON. A HUGEINT becomes a DECIMAL(38,0) holding its exact 128 bits (also
    beyond 38 digits), so Int128 takes it whole; a decimal of at most 15 digits round-trips through
    a float.
    """
    casts = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.Decimal) and dtype.scale == 0:
            casts.append(pl.col(name).cast(pl.Int128))
        elif isinstance(dtype, pl.Decimal) and (dtype.precision or 38) <= FLOAT_DIGITS:
            casts.append(pl.col(name).cast(pl.Float64))
    return frame.with_columns(casts) if casts else frame


def _column(index: int, name: str, target: str | None) -> duckdb.Expression:
    """Column ``index`` (by position: names may differ only in case) as ``target``, keeping its name."""
    column = duckdb.SQLExpression(f"#{index + 1}")
    return (column.cast(duckdb.sqltype(target)) if target else column).alias(name)


def _target_type(dtype: DuckDBPyType, nested_as_text: bool) -> str | None:
    """The type to convert a column to inside DuckDB, or None to keep it."""
    return None if _native(dtype, nested_as_text) else "VARCHAR"


def _native(dtype: DuckDBPyType, nested_as_text: bool) -> bool:
    if dtype.id in NATIVE_TYPES:
        return True
    if dtype.id not in NESTED_TYPES or nested_as_text:
        return False
    children = [child for _, child in dtype.children if isinstance(child, DuckDBPyType)]
    return all(_native(child, nested_as_text) for child in children)

"""The response cache's DuckDB tables, apart from the cache itself.

The usage tables are created with them (``llm/usage.py``) by commands that only read, such as
``status``; the cache module brings numpy with it, which a reading command does not load.
"""

from __future__ import annotations

from graphrag_assets.storage.cache_owners import CHAT_TABLE, EMBEDDING_TABLE

CHAT_TABLE_DDL = f"""
create table if not exists {CHAT_TABLE} (
    key VARCHAR PRIMARY KEY,
    kind VARCHAR,
    model VARCHAR,
    purpose VARCHAR,
    response VARCHAR,
    prompt_tokens BIGINT,
    completion_tokens BIGINT,
    created_at TIMESTAMP
)
"""
EMBEDDING_TABLE_DDL = f"""
create table if not exists {EMBEDDING_TABLE} (
    key VARCHAR PRIMARY KEY,
    model VARCHAR,
    vector FLOAT[]
)
"""

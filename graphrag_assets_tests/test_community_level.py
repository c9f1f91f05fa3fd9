"""A community level the index does not have is refused in one sentence naming the levels it has.

Before, `--community-level 9` on an index of levels 0-2 was accepted: local and DRIFT searches used
every level and global search rolled up to the top, with nothing to say the request was ignored.
"""

from __future__ import annotations

import asyncio

import pytest

from graphrag_assets.core.errors import UserError
from graphrag_assets.query.engine import run_query
from graphrag_assets.query.request import QueryOptions, SearchRequest
from graphrag_assets_tests.test_query_global import make_data, settings


def ask(method: str, level: int | None) -> None:
    request = SearchRequest("What happened?", make_data(), settings(), options=QueryOptions(method, level))
    asyncio.run(run_query(request))


@pytest.mark.parametrize("method", ["global", "drift", "local"])
def test_a_level_above_the_index_is_refused_naming_its_levels(method: str) -> None:
    with pytest.raises(UserError) as refused:
        ask(method, 9)
    assert str(refused.value) == (
        "community level 9 is not in this index, whose communities have levels 0, 1 and 2; "
        "pass --community-level 2 or lower."
    )


def test_the_top_level_and_no_level_are_answered() -> None:
    ask("global", 2)
    ask("global", None)

"""``index`` on a project with ``storage.shared_url``: continue from the shared build, publish the new one.

Nothing is imported or read when no shared location is set, so the embedded default starts as
fast as before (pyarrow, which copies the files, is imported only for a shared index).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphrag_assets.core.settings import Settings

Announce = Callable[[str], None]


@dataclass
class SharedIndex:
    """The shared build an ``index`` run started from (None: none, or no shared location)."""

    current: Any = None  # storage.shared_build.Pointer, when a shared location is set
    announce: Announce = lambda message: None
    started_as: str | None = None  # the shared build the local index was when the run started

    @classmethod
    def before_index(cls, settings: Settings, announce: Announce) -> SharedIndex:
        """Fetch the shared build first when it is newer than the local index (or there is none)."""
        if not settings.storage.shared_url:
            return cls()
        from graphrag_assets.project.shared_index import continue_from_shared, local_build

        current = continue_from_shared(settings, announce)
        return cls(current, announce, local_build(settings))

    def after_index(self, settings: Settings) -> None:
        """Publish the index the run left as the new shared build (nothing to do: nothing published)."""
        if not settings.storage.shared_url:
            return
        from graphrag_assets.project.shared_index import publish_after_index

        publish_after_index(settings, self.current, self.started_as, self.announce)

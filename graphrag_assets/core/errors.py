"""User-facing errors.

Anything a user can fix themselves (a bad setting, a missing key, an unreadable file) is raised
as a :class:`UserError` whose message is one sentence saying what is wrong and how to fix it.
The CLI prints that sentence and exits non-zero instead of showing a traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """An error the user can fix; ``str(error)`` is the whole message shown to them."""


class ConfigError(UserError):
    """The settings file or environment holds an invalid value."""


class LLMError(UserError):
    """A model endpoint call failed for good (after retries, or with a non-retryable status).

    ``kind`` says how (``auth``, ``not_found``, ``refused``, ``timeout``...), for callers that
    word their own advice, such as ``graphrag-assets doctor``.
    """

    def __init__(self, message: str, kind: str = "") -> None:
        super().__init__(message)
        self.kind = kind


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a command; ``str(error)`` is the sentence shown, when the command knows better
    than the generic one what was kept and how to go on (``index`` says nothing was published)."""


def dimension_mismatch(name: str, stored: int, given: int) -> str:
    """The one sentence for a question embedded differently from the index (another model or size)."""
    return (
        f"the index's '{name}' vectors have {stored} dimensions but the query embedder gives {given}; query with the "
        "embedding settings the index was built with (llm.embeddings, llm.embedding_model, OPENAI_API_KEY / OPENAI_BASE_URL)."
    )

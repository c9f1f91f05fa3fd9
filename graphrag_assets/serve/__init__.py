"""``graphrag-assets serve``: the index over HTTP for applications, chat front-ends and people.

- :mod:`.app` builds the ASGI application (FastAPI) and runs it with uvicorn;
- :mod:`.projects` keeps each project's index loaded (:mod:`.snapshot`) and its model clients
  open, and swaps in a newer published build without a restart;
- :mod:`.openai_api` (``/v1``: OpenAI-compatible chat), :mod:`.native_api` (``/api``) and
  :mod:`.web` (the page at ``/``) are the routes; :mod:`.gate` checks the API key, the request
  size and picks the project; :mod:`.errors` turns every failure into one JSON sentence.

The server only reads the index (and writes the model response cache, as ``query`` does): it
never imports Dagster.
"""

"""Clients made for each event loop share one TLS context (llm/client.py ``_tls_context``).

Each pipeline step runs its own event loop and so its own ``openai`` client; the HTTP library's
default reads the certificate bundle again for every client. Counted in a fresh process through
the standard library's ``load_verify_locations``, while three loops each answer a real call from
the scripted server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, ssl, sys
    loads = []
    original = ssl.SSLContext.load_verify_locations
    def counted(self, *args, **kwargs):
        loads.append(1)
        return original(self, *args, **kwargs)
    ssl.SSLContext.load_verify_locations = counted

    from graphrag_assets.core.settings import LLMSettings
    from graphrag_assets.llm.factory import build_chat_model
    from graphrag_assets.llm.types import ChatOptions
    from graphrag_assets.llm.usage import UsageMeter

    model = build_chat_model(LLMSettings(api_key="sk-test", base_url=sys.argv[1], max_retries=0), None, UsageMeter())
    answers = []
    for turn in range(3):
        async def ask():
            result = await model.chat([{"role": "user", "content": f"turn {turn}"}], purpose="test", options=ChatOptions())
            client = (await model.loop_state()).client
            return result.text, client._client._transport._pool._ssl_context
        answers.append(asyncio.run(ask()))
    context = answers[0][1]
    print(json.dumps({
        "loads": len(loads), "answered": all(text for text, _ in answers),
        "shared": all(c is context for _, c in answers),
        "verifies": context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname,
    }))
    """
)


def test_three_event_loops_read_the_certificate_bundle_once_and_still_verify(openai_server) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, openai_server.base_url], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "loads": 1,
        "answered": True,
        "shared": True,
        "verifies": True,
    }

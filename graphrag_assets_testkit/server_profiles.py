"""Emulations of real OpenAI-compatible servers for the scripted server (``--profile NAME``).

Each profile reproduces what one kind of server documents (or was shown to do in its issue
tracker) at the points where our client looks: request routing and authentication, the
parameters it refuses and with which error body, what it does to an answer, usage figures, and
embeddings. The sources are listed per quirk in docs/model-servers.md. ``openai`` (the default)
is the well-behaved server every other test uses: it checks nothing and passes answers through.

Profiles only change the shape of the exchange, never the answer text the responder chose (apart
from what the server itself adds, such as a ``<think>`` block), so an index built through any
profile must equal the one built through ``openai`` given the same answers.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

WELL_BEHAVED_MODELS = ["gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "text-embedding-3-large"]


@dataclass(frozen=True)
class Reply:
    """An error answer: status, JSON body, extra headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    """Where a request goes (``chat``, ``embeddings`` or ``models``), the model its path names
    (Azure deployments), the API version it asked for, or the error it gets instead."""

    endpoint: str | None
    model: str | None = None
    error: Reply | None = None
    api_version: str = ""


def openai_error(
    status: int, message: str, kind: str = "invalid_request_error", param: str | None = None, code: str | None = None
) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": param, "code": code}})


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def schema_instance(schema: dict[str, Any]) -> Any:
    """The smallest value a JSON schema allows (what constrained decoding forces at worst)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties") or {}
        required = schema.get("required", list(properties))
        return {name: schema_instance(sub) for name, sub in properties.items() if name in required}
    return {"array": [], "string": "", "number": 0, "integer": 0, "boolean": False}.get(str(kind))


def is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def path_route(path: str) -> str | None:
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/embeddings"):
        return "embeddings"
    if path.endswith("/models"):
        return "models"
    return None


class Profile:
    """The well-behaved OpenAI-compatible server (and the base of every emulation)."""

    name = "openai"
    chat_models: tuple[str, ...] = ()  # empty: any model name is answered
    embedding_models: tuple[str, ...] = ()

    def __init__(self, api_key: str | None = None, load_seconds: float = 0.0) -> None:
        self.api_key = api_key
        self.load_seconds = load_seconds
        self._loaded: set[str] = set()
        self._lock = threading.Lock()

    # -- routing and authentication ---------------------------------------------------------------
    def route(self, path: str, query: dict[str, list[str]], headers: Any) -> Route:
        endpoint = path_route(path)
        if (
            self.api_key is not None
            and endpoint is not None
            and headers.get("authorization") != f"Bearer {self.api_key}"
        ):
            return Route(endpoint, error=self.unauthorized(headers.get("authorization") or ""))
        return Route(endpoint)

    def unauthorized(self, presented: str) -> Reply:
        shown = presented.removeprefix("Bearer ")
        masked = f"{shown[:3]}***{shown[-4:]}" if len(shown) > 8 else "***"
        return openai_error(
            401,
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys.",
            code="invalid_api_key",
        )

    def model_list(self) -> list[dict[str, Any]]:
        models = list(self.chat_models + self.embedding_models) or WELL_BEHAVED_MODELS
        return [{"id": m, "object": "model", "created": 0, "owned_by": self.name} for m in models]

    def unknown_model(self, model: str) -> Reply:
        return openai_error(
            404, f"The model `{model}` does not exist or you do not have access to it.", code="model_not_found"
        )

    def check_model(self, endpoint: str, model: str) -> Reply | None:
        known = self.chat_models if endpoint == "chat" else self.embedding_models
        return self.unknown_model(model) if known and model not in known else None

    # -- chat ---------------------------------------------------------------------------------------
    def check_chat(self, body: dict[str, Any], text: str, route: Route) -> Reply | None:
        """An error for a request this server refuses, else None."""
        return None

    def wait_for_model(self, model: str) -> None:
        """The first request for a model waits for it to load (local servers)."""
        if self.load_seconds <= 0:
            return
        with self._lock:
            first = model not in self._loaded
            self._loaded.add(model)
        if first:
            time.sleep(self.load_seconds)

    def shape_answer(self, body: dict[str, Any], answer: str) -> str:
        """The content the server sends for the responder's ``answer``."""
        return answer

    def finish_reason(self, body: dict[str, Any], answer: str) -> str:
        return "stop"

    def usage(self, body: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
        return usage

    def stream_usage(self, body: dict[str, Any]) -> bool:
        return bool((body.get("stream_options") or {}).get("include_usage"))

    def decorate(self, response: dict[str, Any]) -> dict[str, Any]:
        """Extra fields this server adds to a chat completion."""
        return response

    # -- embeddings ---------------------------------------------------------------------------------
    def check_embeddings(self, body: dict[str, Any]) -> Reply | None:
        return None

    def embedding_dim(self, body: dict[str, Any], default: int) -> int:
        return int(body.get("dimensions") or default)

    def base64(self, body: dict[str, Any]) -> bool:
        return body.get("encoding_format") == "base64"


class ReasoningProfile(Profile):
    """OpenAI reasoning models (o3-mini, o4-mini): ``max_tokens`` and ``temperature`` refused with
    HTTP 400, ``max_completion_tokens`` accepted, reasoning tokens reported in usage."""

    name = "reasoning"
    chat_models = ("o4-mini", "o3-mini")
    embedding_models = ("text-embedding-3-small",)
    REASONING_TOKENS = 64

    def check_chat(self, body: dict[str, Any], text: str, route: Route) -> Reply | None:
        if "max_tokens" in body:
            return openai_error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                param="max_tokens",
                code="unsupported_parameter",
            )
        if "temperature" in body:
            return openai_error(
                400,
                "Unsupported parameter: 'temperature' is not supported with this model.",
                param="temperature",
                code="unsupported_parameter",
            )
        return None

    def usage(self, body: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
        completion = usage["completion_tokens"] + self.REASONING_TOKENS
        return {
            **usage,
            "completion_tokens": completion,
            "total_tokens": usage["prompt_tokens"] + completion,
            "completion_tokens_details": {"reasoning_tokens": self.REASONING_TOKENS},
        }


AZURE_UNAUTHORIZED = (
    "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid "
    "key for an active subscription and use a correct regional API endpoint for your resource."
)
AZURE_NO_DEPLOYMENT = (
    "The API deployment for this resource does not exist. If you created the deployment within the "
    "last 5 minutes, please wait a moment and try again."
)
AZURE_PROMPT_FILTERED = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. "
    "Please modify your prompt and retry."
)
_DEPLOYMENT_PATH = re.compile(r"^/openai/deployments/([^/]+)/(chat/completions|embeddings)$")
_SAFE = {"filtered": False, "severity": "safe"}


class AzureProfile(Profile):
    """Azure OpenAI: deployment-name URLs, a required ``api-version`` query, the ``api-key``
    header, Azure's error bodies, and its content filter (prompt refused with HTTP 400, answer
    withheld with ``finish_reason: content_filter``). Features follow the API version:
    ``json_schema`` from 2024-08-01-preview, ``stream_options`` from 2024-09-01-preview."""

    name = "azure"
    chat_models = ("gpt-4o-mini",)  # deployment names
    embedding_models = ("text-embedding-3-small",)
    PROMPT_TRIGGER = re.compile(r"FORBIDDEN-TOPIC")
    ANSWER_TRIGGER = re.compile(r"FILTERED-ANSWER")

    def route(self, path: str, query: dict[str, list[str]], headers: Any) -> Route:
        not_found = Reply(404, {"error": {"code": "404", "message": "Resource not found"}})
        version = (query.get("api-version") or [""])[0]
        if path == "/openai/models" and version:
            return Route("models", api_version=version)
        match = _DEPLOYMENT_PATH.match(path)
        if match is None or not version:
            return Route(path_route(path), error=not_found)
        if self.api_key is not None and headers.get("api-key") != self.api_key:
            return Route(path_route(path), error=Reply(401, {"error": {"code": "401", "message": AZURE_UNAUTHORIZED}}))
        return Route(path_route(path), model=match.group(1), api_version=version)

    def unknown_model(self, model: str) -> Reply:
        return Reply(404, {"error": {"code": "DeploymentNotFound", "message": AZURE_NO_DEPLOYMENT}})

    def check_chat(self, body: dict[str, Any], text: str, route: Route) -> Reply | None:
        if self.PROMPT_TRIGGER.search(text):
            return Reply(
                400,
                {
                    "error": {
                        "message": AZURE_PROMPT_FILTERED,
                        "type": None,
                        "param": "prompt",
                        "code": "content_filter",
                        "status": 400,
                        "innererror": {
                            "code": "ResponsibleAIPolicyViolation",
                            "content_filter_result": {
                                "hate": {"filtered": True, "severity": "medium"},
                                "self_harm": _SAFE,
                                "sexual": _SAFE,
                                "violence": _SAFE,
                            },
                        },
                    }
                },
            )
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema" and route.api_version < "2024-08-01":
            return openai_error(
                400,
                "response_format value as json_schema is enabled only for api versions 2024-08-01-preview and later",
                kind="",
                param="",
                code="BadRequest",
            )
        if "stream_options" in body and route.api_version < "2024-09-01":
            return openai_error(400, "Unrecognized request argument supplied: stream_options")
        return None

    def shape_answer(self, body: dict[str, Any], answer: str) -> str:
        return "" if self.ANSWER_TRIGGER.search(answer) else answer

    def finish_reason(self, body: dict[str, Any], answer: str) -> str:
        return "content_filter" if self.ANSWER_TRIGGER.search(answer) else "stop"

    def decorate(self, response: dict[str, Any]) -> dict[str, Any]:
        verdicts = {"hate": _SAFE, "self_harm": _SAFE, "sexual": _SAFE, "violence": _SAFE}
        response["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": verdicts}]
        for choice in response.get("choices", []):
            choice["content_filter_results"] = verdicts
        return response


THINKING = (
    "Let me work out what is being asked before I answer. The instructions describe the format; "
    "I will follow it and leave out anything I am unsure about."
)


class OllamaProfile(Profile):
    """Ollama's OpenAI-compatible API serving a thinking model: a ``<think>`` block before every
    answer, ``response_format`` json_schema accepted but not followed (the model writes prose and
    a fenced block), json_object followed, no usage in streams, a slow first request while the
    model loads, any API key accepted, Ollama's error body for a model that is not pulled."""

    name = "ollama"
    chat_models = ("qwen3:8b",)
    embedding_models = ("nomic-embed-text",)

    def route(self, path: str, query: dict[str, list[str]], headers: Any) -> Route:
        return Route(path_route(path))  # Ollama ignores the key (the client must still send one)

    def unknown_model(self, model: str) -> Reply:
        return openai_error(404, f'model "{model}" not found, try pulling it first', kind="api_error")

    def shape_answer(self, body: dict[str, Any], answer: str) -> str:
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema" and is_json(answer):
            answer = f"Here is the JSON you asked for:\n```json\n{answer}\n```"
        return f"<think>\n{THINKING}\n</think>\n\n{answer}"

    def stream_usage(self, body: dict[str, Any]) -> bool:
        return False


VLLM_MAX_MODEL_LEN = 8192


class VllmProfile(Profile):
    """vLLM's OpenAI-compatible server: ``max_model_len`` in the model list, strict context-length
    errors (HTTP 400 naming the window and the tokens asked for) in vLLM's flat error body,
    ``response_format`` json_schema and json_object enforced while decoding."""

    name = "vllm"
    chat_models = ("Qwen/Qwen2.5-7B-Instruct",)
    embedding_models = ("BAAI/bge-m3",)

    def __init__(
        self, api_key: str | None = None, load_seconds: float = 0.0, max_model_len: int = VLLM_MAX_MODEL_LEN
    ) -> None:
        super().__init__(api_key, load_seconds)
        self.max_model_len = max_model_len
        self.count_tokens: Any = None  # set by the server (its token counter)

    def route(self, path: str, query: dict[str, list[str]], headers: Any) -> Route:
        endpoint = path_route(path)
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            return Route(endpoint, error=Reply(401, {"error": "Unauthorized"}))
        return Route(endpoint)

    @staticmethod
    def error(status: int, message: str, kind: str) -> Reply:
        return Reply(status, {"object": "error", "message": message, "type": kind, "param": None, "code": status})

    def model_list(self) -> list[dict[str, Any]]:
        return [
            {
                "id": m,
                "object": "model",
                "created": 0,
                "owned_by": "vllm",
                "root": m,
                "parent": None,
                "max_model_len": self.max_model_len,
            }
            for m in self.chat_models + self.embedding_models
        ]

    def unknown_model(self, model: str) -> Reply:
        return self.error(404, f"The model `{model}` does not exist.", "NotFoundError")

    def check_chat(self, body: dict[str, Any], text: str, route: Route) -> Reply | None:
        messages = body.get("messages") or []
        prompt = sum(self.count_tokens(message_text(m)) + 4 for m in messages) + 3
        completion = body.get("max_completion_tokens") or body.get("max_tokens")
        if completion is None:
            if prompt > self.max_model_len:
                return self.error(
                    400,
                    f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                    f"requested {prompt} tokens in the messages, Please reduce the length of the messages.",
                    "BadRequestError",
                )
            return None
        if prompt + completion > self.max_model_len:
            return self.error(
                400,
                f"This model's maximum context length is {self.max_model_len} tokens. However, you "
                f"requested {prompt + completion} tokens ({prompt} in the messages, {completion} in the "
                "completion). Please reduce the length of the messages or completion.",
                "BadRequestError",
            )
        return None

    def shape_answer(self, body: dict[str, Any], answer: str) -> str:
        response_format = body.get("response_format") or {}
        if response_format.get("type") == "json_schema" and not is_json(answer):
            return json.dumps(schema_instance(response_format["json_schema"]["schema"]))
        if response_format.get("type") == "json_object" and not is_json(answer):
            return "{}"
        return answer


class NoDimensionsProfile(Profile):
    """An embeddings endpoint without ``dimensions`` support: by default like llama.cpp's server
    (the parameter is ignored, vectors keep the model's size); ``refuse=True`` like OpenAI for
    text-embedding-ada-002 (HTTP 400 "This model does not support specifying dimensions.")."""

    name = "no-dimensions"

    def __init__(self, api_key: str | None = None, load_seconds: float = 0.0, refuse: bool = False) -> None:
        super().__init__(api_key, load_seconds)
        self.refuse = refuse

    def check_embeddings(self, body: dict[str, Any]) -> Reply | None:
        if self.refuse and "dimensions" in body:
            return openai_error(400, "This model does not support specifying dimensions.")
        return None

    def embedding_dim(self, body: dict[str, Any], default: int) -> int:
        return default


class Base64Profile(Profile):
    """An embeddings endpoint that answers with base64 strings of little-endian float32, whatever
    ``encoding_format`` asks (the form OpenAI's own SDKs request by default)."""

    name = "base64"

    def base64(self, body: dict[str, Any]) -> bool:
        return True


class FloatOnlyProfile(Profile):
    """An embeddings endpoint that knows only float vectors: by default it ignores
    ``encoding_format`` and answers float lists; ``refuse=True`` answers a request for base64 with
    HTTP 400 naming the parameter, the way a server validating it against ``float`` alone does;
    ``crash=True`` answers it with a bare HTTP 500, the way a server whose base64 path raises does
    (tabbyAPI before its fix)."""

    name = "float-only"

    def __init__(
        self, api_key: str | None = None, load_seconds: float = 0.0, refuse: bool = False, crash: bool = False
    ) -> None:
        super().__init__(api_key, load_seconds)
        self.refuse = refuse
        self.crash = crash

    def check_embeddings(self, body: dict[str, Any]) -> Reply | None:
        if body.get("encoding_format", "float") == "float":
            return None
        if self.refuse:
            return openai_error(
                400,
                f"encoding_format {body['encoding_format']!r} is not supported; only 'float' is.",
                param="encoding_format",
            )
        if self.crash:
            return Reply(500, {"detail": "Internal Server Error"})
        return None

    def base64(self, body: dict[str, Any]) -> bool:
        return False


@dataclass(frozen=True)
class ProfileSpec:
    """How to start a scripted server as one kind of server (the ``--profile*`` options)."""

    name: str = "openai"
    api_key: str | None = None
    load_seconds: float = 0.0
    options: dict[str, Any] = field(default_factory=dict)

    def arguments(self) -> list[str]:
        args = ["--profile", self.name, "--load-seconds", str(self.load_seconds)]
        if self.api_key is not None:
            args += ["--api-key", self.api_key]
        for name, value in self.options.items():
            args += ["--profile-option", f"{name}={json.dumps(value)}"]
        return args


PROFILES: dict[str, type[Profile]] = {
    p.name: p
    for p in (
        Profile,
        ReasoningProfile,
        AzureProfile,
        OllamaProfile,
        VllmProfile,
        NoDimensionsProfile,
        Base64Profile,
        FloatOnlyProfile,
    )
}


def make_profile(
    name: str, api_key: str | None = None, load_seconds: float = 0.0, options: dict[str, Any] | None = None
) -> Profile:
    """The profile ``name`` (``--profile``), with its own options (e.g. ``max_model_len``, ``refuse``)."""
    if name not in PROFILES:
        raise SystemExit(f"--profile must be one of {sorted(PROFILES)}, got {name!r}")
    return PROFILES[name](api_key, load_seconds, **(options or {}))

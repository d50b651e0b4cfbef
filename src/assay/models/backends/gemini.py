"""Gemini judge backend through `google-genai`: the Gemini API or Vertex AI.

Model strings `gemini-*` (ADK's default judge `gemini-2.5-flash`) and `gemini:NAME`.
Credentials are the SDK's own: `GOOGLE_API_KEY` / `GEMINI_API_KEY` for the Gemini API,
or `GOOGLE_GENAI_USE_VERTEXAI=true` with `GOOGLE_CLOUD_PROJECT`, `GOOGLE_CLOUD_LOCATION`
and application-default credentials for Vertex AI. `base_url` in the judge options
points the SDK elsewhere (a proxy or a stand-in); without a key a placeholder is sent.

A JSON schema in the settings becomes ``responseMimeType: application/json`` with
``responseJsonSchema`` (the JSON Schema form, not the OpenAPI subset of
``responseSchema``); a model that rejects it gets plain-text requests from then on.
Needs ``google-genai>=1.40`` (the first with `aclose` and `response_json_schema`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

import httpx
from google import genai
from google.auth import exceptions as auth_errors
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from assay.errors import ConfigError
from assay.models.backends import SDKBackend, api_key_or_placeholder, error_detail, split_system
from assay.models.types import BackendReply, GenerationSettings, ModelCallError

# The SDK talks through httpx, or httpx2 (a fork with its own exception classes) when
# only that one is installed or GOOGLE_GENAI_HTTP_CLIENT asks for it.
_TIMEOUTS: tuple[type[BaseException], ...] = (httpx.TimeoutException,)
_TRANSPORT: tuple[type[BaseException], ...] = (httpx.TransportError,)
try:
    import httpx2

    _TIMEOUTS += (httpx2.TimeoutException,)
    _TRANSPORT += (httpx2.TransportError,)
except ImportError:
    pass
try:
    # With aiohttp installed (google-cloud-aiplatform's evaluation extra brings it), the
    # SDK's async calls go through aiohttp, whose errors are neither httpx's nor OSError.
    import aiohttp

    _TIMEOUTS += (TimeoutError, aiohttp.ServerTimeoutError)
    _TRANSPORT += (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)
except ImportError:
    pass


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("true", "1")


class GeminiBackend(SDKBackend):
    """A `ModelBackend` over ``models.generateContent`` (one candidate per call).

    Raises ConfigError when neither an API key nor Vertex AI is configured.
    """

    backend = "gemini"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        super().__init__(model, base_url=base_url, timeout_s=timeout_s)
        vertex = _env_flag("GOOGLE_GENAI_USE_VERTEXAI") or _env_flag("GOOGLE_GENAI_USE_ENTERPRISE")
        env_key = os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        api_key = api_key_or_placeholder(
            api_key,
            configured=vertex or bool(env_key),
            own_endpoint=base_url is None,
            missing=(
                f"judge {model} needs Gemini credentials: set GEMINI_API_KEY (or"
                " GOOGLE_API_KEY), or GOOGLE_GENAI_USE_VERTEXAI=true with"
                " GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION for Vertex AI"
            ),
        )
        # Vertex AI and the Gemini API serve different models under the same names; the
        # project and location pick the Vertex endpoint.
        self.endpoint = base_url or (
            "vertex:{}/{}".format(
                os.environ.get("GOOGLE_CLOUD_PROJECT", ""),
                os.environ.get("GOOGLE_CLOUD_LOCATION", ""),
            )
            if vertex
            else "gemini-api"
        )
        http_options = genai_types.HttpOptions(
            base_url=base_url,
            timeout=max(1, round(timeout_s * 1000)),  # the SDK counts milliseconds
            retry_options=genai_types.HttpRetryOptions(attempts=1),
        )
        try:
            self._client = genai.Client(api_key=api_key, http_options=http_options)
        except (ValueError, auth_errors.GoogleAuthError) as exc:
            # missing or conflicting settings, or no application-default credentials
            raise ConfigError(f"judge {model}: cannot set up the Gemini client: {exc}") from exc

    async def _request(
        self,
        messages: Sequence[Mapping[str, str]],
        settings: GenerationSettings,
        schema: dict[str, object] | None,
    ) -> BackendReply:
        """One generateContent call."""
        system, turns = split_system(messages)
        contents = [
            genai_types.Content(
                role="model" if role == "assistant" else "user",
                parts=[genai_types.Part(text=text)],
            )
            for role, text in turns
        ]
        config = genai_types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=settings.temperature,
            max_output_tokens=settings.max_tokens,
            response_mime_type="application/json" if schema is not None else None,
            response_json_schema=schema,
        )
        try:
            response = await self._client.aio.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except genai_errors.APIError as exc:
            headers = getattr(exc.response, "headers", None)
            detail = exc.message or error_detail(exc.details)
            raise self.status_error(exc.code, detail, headers) from exc
        except _TIMEOUTS as exc:
            raise self.timeout_error() from exc
        except _TRANSPORT as exc:
            raise self.connection_error(exc) from exc
        except json.JSONDecodeError as exc:
            raise self.malformed_reply_error(str(exc)) from exc
        except auth_errors.TransportError as exc:  # fetching a Vertex AI token failed
            raise self.connection_error(exc) from exc
        except auth_errors.GoogleAuthError as exc:
            raise ModelCallError(
                f"{self.backend} judge {self.model}: Google authentication failed: {exc}",
                retryable=False,
            ) from exc
        return self._reply(response)

    def _reply(self, response: genai_types.GenerateContentResponse) -> BackendReply:
        if not response.candidates:
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason is not None:
                why = f"prompt blocked: {feedback.block_reason}"
                if feedback.block_reason_message:
                    why += f" ({feedback.block_reason_message})"
                raise self.empty_reply_error(why)
            raise self.malformed_reply_error("no candidates in the reply")
        candidate = response.candidates[0]
        parts = candidate.content.parts if candidate.content is not None else None
        # Thought summaries (thinking models) are not the answer.
        text = "".join(p.text for p in parts or [] if p.text and not p.thought)
        if not text.strip():
            raise self.empty_reply_error(f"finish reason {candidate.finish_reason}")
        usage = response.usage_metadata
        output_tokens = 0
        if usage is not None:
            # Thinking tokens are billed as output.
            output_tokens = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
        return BackendReply(
            text=text,
            input_tokens=(usage.prompt_token_count or 0) if usage is not None else 0,
            output_tokens=output_tokens,
        )

    async def aclose(self) -> None:
        """Close the SDK's HTTP clients."""
        await self._client.aio.aclose()
        self._client.close()


create_backend = GeminiBackend.create

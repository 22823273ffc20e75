"""Which LLM judges Gaia2 scenarios: `are-benchmark`'s `--judge_*` options, checked.

Importable without ARE (the CLI's parser and `ServiceConfig` read it); ARE's list of providers
is read only when options are actually given. `areasync.bridge.judge.llm` builds ARE's judge from
them.
"""

from __future__ import annotations

import dataclasses
from urllib.parse import urlsplit

# ARE's `DEFAULT_JUDGE_MODEL` (are.simulation.validation.configs), `are-benchmark`'s default
# `--judge_model`; restated so that reading it costs no ARE import (a test keeps them equal).
DEFAULT_JUDGE_MODEL = "meta-llama/Meta-Llama-3.3-70B-Instruct"
# The provider whose models need `--judge_endpoint`: a server of your own, no hosted default.
LOCAL_PROVIDER = "local"


@dataclasses.dataclass(frozen=True, kw_only=True)
class JudgeOptions:
    """`are-benchmark run`'s judge options: `--judge_model`, `--judge_provider`,
    `--judge_endpoint`, with their meanings (ARE's `LLMEngineConfig` of the judge)."""

    model: str = DEFAULT_JUDGE_MODEL
    provider: str
    endpoint: str | None = None

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.model, str) or not self.model.strip():
            problems.append("--judge_model must name a model")
        if self.provider not in _providers():
            problems.append(
                f"--judge_provider {self.provider!r} is not one of ARE's providers "
                f"({', '.join(_providers())})"
            )
        if self.endpoint is not None and not _http_url(self.endpoint):
            problems.append(
                f"--judge_endpoint {self.endpoint!r} is not an http(s) URL "
                "(e.g. http://127.0.0.1:8000/v1)"
            )
        if self.provider == LOCAL_PROVIDER and self.endpoint is None:
            problems.append(
                "--judge_provider local needs --judge_endpoint, the URL of your "
                "OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1)"
            )
        if problems:
            raise ValueError("invalid judge options: " + "; ".join(problems))

    @classmethod
    def from_options(
        cls, model: str | None, provider: str | None, endpoint: str | None
    ) -> JudgeOptions | None:
        """The judge `areasync serve --judge_model M --judge_provider P --judge_endpoint URL`
        asks for; None when none of the three is given. ValueError (saying what to add or fix)
        when they are given partly: `--judge_provider` is needed as soon as any is given,
        because the server has no agent model whose provider the judge could share (the
        default in `are-benchmark`); `--judge_model` defaults to ARE's judge model."""
        if model is None and provider is None and endpoint is None:
            return None
        if provider is None:
            given = " and ".join(
                name
                for name, value in (("--judge_model", model), ("--judge_endpoint", endpoint))
                if value is not None
            )
            raise ValueError(
                f"{given} given without --judge_provider: name the judge's provider too "
                "(areasync serve has no agent model whose provider the judge could share, as "
                "are-benchmark's --provider); e.g. --judge_provider local --judge_model "
                "openai/MODEL --judge_endpoint http://127.0.0.1:8000/v1"
            )
        return cls(
            model=DEFAULT_JUDGE_MODEL if model is None else model,
            provider=provider,
            endpoint=endpoint,
        )

    def describe(self) -> str:
        """The judge in a few words, for messages and the banner (no endpoint: it may carry
        credentials)."""
        return f"model {self.model!r} via provider {self.provider!r}"

    def public(self) -> dict[str, str]:
        """What a session listing says of its judge (no endpoint, as `describe`)."""
        return {"model": self.model, "provider": self.provider}


def _providers() -> list[str]:
    from are.simulation.config import PROVIDERS

    return list(PROVIDERS)


def _http_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)

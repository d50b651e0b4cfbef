"""Talking to models, below everything that calls one (judges, the simulated user, the
OpenAI-tools and HTTP agents). Nothing here knows what a judge, a metric or an agent is.

- `types`: `GenerationSettings`, `BackendReply` (text and token usage),
  `ModelCallError`, the `ModelBackend` protocol ("send messages, get text back");
- `backends`: one module per API (`openai_compat`, `gemini`, `anthropic`, `local_gguf`),
  built from a model string by `resolve.make_backend` (the SDK is imported only then);
- `client`: `ModelClient`, a backend with the reply cache, a limiter, retries, a
  timeout and call counters (`stats.CallStats`);
- `registry`: `ModelRegistry`, one per run: a limiter and retry policy per (provider,
  endpoint) shared by every caller of that endpoint, and the run's reply cache;
- `cache`: the reply cache (the store's `judge_cache` table, or memory);
- `policy`: the adaptive limiter and the retry policy; `http`: reading a model API's
  HTTP answers (retryable statuses, Retry-After, error bodies).
"""

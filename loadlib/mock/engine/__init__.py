"""The batching engine: a model of an inference server under load (continuous batching, chunked prefill, a KV cache
with preemption and prefix caching). `model` is pure (arrivals in, step schedules out), so tests, the simulator
behind `/mock/capacity` and the asyncio `driver` share one definition of what the server does."""

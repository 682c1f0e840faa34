"""``/metrics`` in Prometheus text format with SGLang's ``sglang:*`` names.

As SGLang's multiprocess registry writes them: scheduler gauges carry
``model_name, engine_type, tp_rank, pp_rank, moe_ep_rank`` (TP0 only), tokenizer
counters and histograms carry ``model_name, engine_type``; counters are exposed with the
``_total`` suffix and no ``_created`` samples.
"""

from __future__ import annotations


def _labels(d: dict) -> str:
    # the multiprocess collector writes labels sorted by name
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(d.items())) + "}"


def render_metrics(sim) -> str:
    s = sim.scheduler
    plan = sim.plan
    base = {"model_name": sim.served_model_name, "engine_type": "unified"}
    sched = {**base, "tp_rank": "0", "pp_rank": "0", "moe_ep_rank": "0"}
    sl, tl = _labels(sched), _labels(base)
    out: list[str] = []

    def gauge(name: str, help_: str, value: float, labels: str = sl) -> None:
        out.append(f"# HELP sglang:{name} {help_}")
        out.append(f"# TYPE sglang:{name} gauge")
        out.append(f"sglang:{name}{labels} {float(value)}")

    def counter(name: str, help_: str, samples: list[tuple[str, float]]) -> None:
        # 0.5.23 declares counters by their _total name; a labelled child (so the family)
        # appears only once something incremented it
        samples = [(labels, value) for labels, value in samples if value]
        if not samples:
            return
        out.append(f"# HELP sglang:{name}_total {help_}")
        out.append(f"# TYPE sglang:{name}_total counter")
        for labels, value in samples:
            out.append(f"sglang:{name}_total{labels} {float(value)}")

    def histogram(name: str, help_: str, hists: dict, labels: dict = base) -> None:
        out.append(f"# HELP sglang:{name} {help_}")
        out.append(f"# TYPE sglang:{name} histogram")
        for streaming, h in hists.items():
            if not h.total:
                continue
            lab = labels if streaming is None else {**labels, "is_streaming": streaming}
            for b, c in zip(h.buckets, h.counts, strict=True):
                out.append(f"sglang:{name}_bucket{_labels({**lab, 'le': str(b)})} {float(c)}")
            out.append(f"sglang:{name}_bucket{_labels({**lab, 'le': '+Inf'})} {float(h.total)}")
            out.append(f"sglang:{name}_count{_labels(lab)} {float(h.total)}")
            out.append(f"sglang:{name}_sum{_labels(lab)} {h.sum}")

    used = s.used_tokens()
    gauge("num_running_reqs", "The number of running requests.", s.num_running)
    gauge("num_queue_reqs", "The number of requests in the waiting queue.", s.num_waiting)
    gauge("num_used_tokens", "The number of used tokens.", used)
    gauge("token_usage", "The token usage.", s.token_usage())
    gauge("full_token_usage", "The token usage of the full attention pool.", s.token_usage())
    gauge("kv_used_tokens", "KV cache tokens in use.", used)
    gauge("kv_available_tokens", "KV cache tokens available.", plan.kv_tokens - used)
    # 0.5.23 exports it on every server (0.0 idle); modelled as busy or not
    gauge("utilization", "The utilization.", 1.0 if s.running else 0.0)
    gauge("gen_throughput", "The generation throughput (token/s).", s.last_gen_throughput)
    prompt_total = sum(s.prompt_tokens_total.values())
    gauge("cache_hit_rate", "The prefix cache hit rate.", s.cached_tokens_total / prompt_total if prompt_total else 0.0)
    gauge("is_cuda_graph", "Whether the batch is using CUDA graph.", 1.0 if plan.cuda_graph else 0.0)
    # 0.5.23 exports the spec gauges on every server, 0.0 without speculative decoding
    gauge("spec_accept_length", "The average acceptance length of speculative decoding.", s.last_accept_len or 0.0)
    gauge("spec_accept_rate", "The average acceptance rate of speculative decoding.", s.last_accept_rate or 0.0)
    gauge("spec_num_steps", "Speculative decoding steps.", plan.spec_num_steps if plan.spec else 0)
    gauge("spec_num_draft_tokens", "Speculative draft tokens.", plan.spec_draft_tokens if plan.spec else 0)
    gauge("num_retracted_reqs", "The number of retracted requests.", s.num_retracted_reqs,
          _labels({**sched, "pid": str(sim.pid + 3)}))  # a "livesum"-less gauge: one series per process
    gauge("max_total_num_tokens", "Maximum total number of tokens in the KV pool.", plan.kv_tokens)
    gauge("weight_memory_usage_gb", "Weight memory usage in GB.", round(plan.mem.weights_gib + plan.mem.draft_weights_gib, 2))
    gauge("kv_cache_memory_usage_gb", "KV cache memory usage in GB.", round(plan.mem.kv_gib, 2))
    for phase, gib in (("prefill", 0.0), ("decode", plan.mem.graphs_gib)):
        gauge("graph_memory_usage_gb", "CUDA graph memory usage in GB.", round(gib, 2), _labels({**sched, "phase": phase}))
    gauge("context_len", "Context length.", sim.context_len)
    # the engine's start-up by phase, written once ready (tokenizer labels): 0.5.23's phases and
    # graph phases
    for name, help_, phases in (
            ("startup_time_seconds", "Engine startup duration by phase in seconds.", sim.phase_s if sim.ready else {}),
            ("startup_cuda_graph_time_seconds", "CUDA graph capture duration by phase in seconds.",
             sim.graph_phases() if sim.ready else {})):
        if phases:
            out.append(f"# HELP sglang:{name} {help_}")
            out.append(f"# TYPE sglang:{name} gauge")
            out += [f"sglang:{name}{_labels({**base, 'phase': p})} {float(v)}" for p, v in phases.items()]
    counter("cuda_graph_passes", "Forward passes run with CUDA graph.", [
        (_labels({**sched, "mode": mode}), n) for mode, n in s.cuda_graph_passes_total.items()])
    counter("num_retracted_requests", "Retracted requests.", [(sl, s.retracted_total)])
    # the main branch's start-up work after ready (0.5.23 has no such counter)
    counter("post_startup_time_seconds", "Startup-phase work recorded after the server became ready.", [
        (_labels({**sched, "phase": phase}), seconds) for phase, seconds in s.post_startup_s.items()])
    counter("num_retracted_input_tokens", "Input tokens of retracted requests.", [(sl, s.retracted_input_tokens_total)])
    counter("num_retracted_output_tokens", "Output tokens of retracted requests.", [(sl, s.retracted_output_tokens_total)])
    counter("prompt_tokens", "Number of prefill tokens processed.", [
        (_labels({**base, "is_streaming": k}), v) for k, v in s.prompt_tokens_total.items()])
    counter("generation_tokens", "Number of generation tokens processed.", [
        (_labels({**base, "is_streaming": k}), v) for k, v in s.generation_tokens_total.items()])
    counter("cached_tokens", "Number of cached prompt tokens.", [(_labels({**base, "cache_source": "device"}), s.cached_tokens_total)])
    counter("num_requests", "Number of requests processed.", [
        (_labels({**base, "is_streaming": k}), v) for k, v in s.num_requests_total.items()])
    counter("num_aborted_requests", "Number of requests aborted.", [(tl, s.num_aborted_total)])
    if plan.spec:
        counter("spec_verify_calls", "Number of speculative verify calls.", [(tl, s.spec_verify_calls_total)])
    histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.", s.h_ttft)
    histogram("queue_time_seconds", "Histogram of queueing time in seconds.", {None: s.h_queue}, sched)
    histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", {None: s.h_itl})
    histogram("e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", s.h_e2e)
    return "\n".join(out) + "\n"

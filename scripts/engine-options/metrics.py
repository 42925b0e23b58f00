"""The Prometheus metrics an engine exports, as JSON: the installed package's own collectors,
constructed the way the engine constructs them when it starts (vLLM's PrometheusStatLogger,
SGLang's tokenizer and scheduler collectors with --enable-metrics), then read back from
prometheus_client: each family's name, type, help, label names and histogram buckets, and the
sample names its /metrics text carries.

    python metrics.py vllm MODEL_DIR > src/engines/metrics/vllm-<version>.json
    python metrics.py sglang MODEL_DIR > src/engines/metrics/sglang-<version>.json

MODEL_DIR is a model's config directory (the engines read its config.json; no weights, no GPU):
test/site/hf-hub/sm121-test/tiny-qwen3 serves. See README.md beside this file.
"""

import importlib.metadata
import json
import os
import platform
import sys
import tempfile


def vllm_collectors(model_dir):
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    from vllm.v1.metrics.loggers import PrometheusStatLogger

    # The served name is the label value only; the device is named, as there is no GPU to find.
    config = VllmConfig(
        model_config=ModelConfig(model=model_dir, served_model_name="sm121-extract", skip_tokenizer_init=True),
        device_config=DeviceConfig(device="cpu"),
    )
    logger = PrometheusStatLogger(config, [0])
    # What the engine does once it is up (vllm/v1/metrics/loggers.py): the cache_config_info gauge.
    logger.log_engine_initialized()
    return "vllm.v1.metrics.loggers.PrometheusStatLogger"


def sglang_collectors(model_dir):
    from sglang.srt.observability.metrics_collector import (
        SchedulerMetricsCollector,
        TokenizerMetricsCollector,
        tokenizer_metric_labels,
    )
    from sglang.srt.runtime_context import SpawnRanks, get_observability, publish
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(model_path=model_dir, served_model_name="sm121-extract", enable_metrics=True, device="cpu")
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0))
    SchedulerMetricsCollector.init_new(
        server_args=args, enable_priority_scheduling=False, enable_lora=False, enable_hierarchical_cache=False
    )
    publish(args, role="tokenizer")
    obs = get_observability()
    TokenizerMetricsCollector(
        server_args=args,
        labels=tokenizer_metric_labels(),
        bucket_time_to_first_token=obs.bucket_time_to_first_token,
        bucket_inter_token_latency=obs.bucket_inter_token_latency,
        bucket_e2e_request_latency=obs.bucket_e2e_request_latency,
    )
    return "sglang.srt.observability.metrics_collector (SchedulerMetricsCollector, TokenizerMetricsCollector)"


ENGINES = {
    # vLLM serves one API server's default registry; SGLang runs several processes and serves
    # prometheus_client's multiprocess registry (it sets PROMETHEUS_MULTIPROC_DIR itself).
    "vllm": {"package": "vllm", "prefix": "vllm:", "multiprocess": False, "build": vllm_collectors},
    "sglang": {"package": "sglang", "prefix": "sglang:", "multiprocess": True, "build": sglang_collectors},
}


def exposition(registry_text, prefix):
    """Family name -> the sample names of its text exposition, in order."""
    samples = {}
    family = None
    for line in registry_text.splitlines():
        if line.startswith("# TYPE "):
            family = line.split(" ")[2]
            samples.setdefault(family, [])
        elif line and not line.startswith("#") and family is not None:
            name = line.split("{")[0].split(" ")[0]
            if name.startswith(prefix) and name not in samples[family]:
                samples[family].append(name)
    return samples


def main():
    engine, model_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    spec = ENGINES[engine]
    if spec["multiprocess"]:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="sm121-metrics-")
    from prometheus_client import REGISTRY, CollectorRegistry, generate_latest, multiprocess

    source = spec["build"](model_dir)
    ours = [c for c in list(REGISTRY._collector_to_names) if getattr(c, "_name", "").startswith(spec["prefix"])]
    # The series the engine makes at start, by their labels other than the model and the engine
    # (vLLM: one per finish reason, waiting reason, prompt source, sleep state; the test site's fake
    # engine makes the same): recorded before the fill below.
    at_start = {
        c._name: [
            {k: v for k, v in zip(c._labelnames, values) if k not in ("model_name", "engine")}
            for values in sorted(c._metrics)
        ]
        for c in ours
        if c._labelnames
    }
    # A family shows in the text only with a child; the engine makes most of them at its first
    # request. One child each (its label values are not recorded) gives every family its samples.
    # A multiprocess gauge ("mostrecent") shows once it was set; the engines set theirs at start.
    for c in ours:
        if c._labelnames and not c._metrics:
            child = c.labels(*["x"] * len(c._labelnames))
            if c._type == "gauge":
                child.set(0)
    if spec["multiprocess"]:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
    else:
        registry = REGISTRY
    samples = exposition(generate_latest(registry).decode("utf-8"), spec["prefix"])
    metrics = {}
    for collector in ours:
        name = collector._name
        kind = collector._type
        family = name + "_total" if kind == "counter" else name
        bounds = getattr(collector, "_upper_bounds", None)
        metrics[name] = {
            "name": name,
            "type": kind,
            "help": collector._documentation,
            "labels": list(collector._labelnames),
            "buckets": None if bounds is None else [b if b != float("inf") else "+Inf" for b in bounds],
            # prometheus_client prints a counter's or histogram's creation time as a gauge of its own.
            "samples": samples.get(family, samples.get(name, [])) + samples.get(name + "_created", []),
        }
        if not spec["multiprocess"]:
            metrics[name]["atStart"] = at_start.get(name, [])
    out = {
        "engine": engine,
        "version": importlib.metadata.version(spec["package"]),
        "python": platform.python_version(),
        "prometheusClient": importlib.metadata.version("prometheus_client"),
        "source": source,
        "multiprocess": spec["multiprocess"],
        "metrics": [metrics[k] for k in sorted(metrics)],
    }
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

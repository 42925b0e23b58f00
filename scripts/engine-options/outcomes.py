"""What the real parser makes of command lines: the expected outcomes that sm121's recipe check
and the test site's fake engine are tested against (test/fixtures/engine-options/).

    /work/venvs/vllm/bin/python scripts/engine-options/outcomes.py vllm DEST,DEST,... > test/fixtures/engine-options/vllm-outcomes.json
    /work/venvs/sglang/bin/python scripts/engine-options/outcomes.py sglang DEST,DEST,... > test/fixtures/engine-options/sglang-outcomes.json
    python scripts/engine-options/outcomes.py vllm - < CASES.json   # the cases of a JSON list on stdin

Each case is an argument list after the model (`vllm serve M ...`, `sglang serve --model-path M ...`)
and its outcome: the dests the parser set, or argparse's error message. The cases are the
spellings argparse accepts for each DEST given (every spelling, `--opt=value`, vLLM's underscore
form, every abbreviation of a long spelling) plus the fixed cases in CASES below.
"""

import argparse
import contextlib
import io
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from extract import sglang_parser  # noqa: E402

CASES = {
    "vllm": [
        ["--tensor_parallel_size", "1"], ["--node_rank", "0"], ["--master_addr", "10.0.0.1"],
        ["--tensor-parallel", "1"], ["--served-model", "other"], ["--head"], ["-n", "1"], ["-r", "0"],
        ["--data-parallel-size", "2"], ["--api-server-count", "1"], ["--kv-cache-dtype", "float16"],
        ["--kv-cache-dtype", "nvfp4"], ["--kv-cache-dtype", "bogus"], ["--tensor"], ["--port"],
        ["--headless=1"], ["--enforce-eager"], ["--no-enable-prefix-caching"], ["--max-model-len", "32768"],
        ["--bogus-flag", "1"], ["--max-model-length", "4096"], ["--host", "0.0.0.0", "--port", "8001", "--headless"],
        ["stray"], ["--port", "--enforce-eager"], ["-tp=2"], ["-tp2"], ["--distributed-executor-backend", "mp"],
        ["--distributed-executor-backend", "ray"], ["--compilation-config.mode", "3"], ["-O3"],
        ["--max-num", "8"], ["--data-parallel-r", "1"], ["--seed", "-1"], ["--dtype", "fp9"], ["--model", "other"],
        ["--device-memory-utilization", "0.8"], ["--tensor", "2"],
    ],
    "sglang": [
        ["--dist-init", "10.0.0.1:5000"], ["--nccl-init-addr", "10.0.0.1:5000"], ["--dp", "2"], ["--tp", "2"],
        ["--tensor-parallel-size", "2"], ["--nccl-port", "5000"], ["--dist-init-addr", "10.0.0.1"],
        ["--kv-cache-dtype", "bogus"], ["--context-length", "65536"], ["--mem-fraction-static", "0.8"],
        ["--bogus-flag"], ["--tp_size", "2"], ["--port"], ["--enable-torch-compile=1"], ["stray"],
        ["--contex", "100"], ["--api-key", "k"], ["--config", "x.yaml"], ["--node-rank", "0"], ["--tp-size", "2", "--node-rank=1"],
    ],
}


def value_for(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(list(action.choices)[0])]
    name = getattr(action.type, "__name__", "")
    if name in ("int", "human_readable_int", "human_readable_int_or_auto"):
        return ["1"]
    if name == "float":
        return ["0.5"]
    return ["10.0.0.1:5000" if "addr" in action.dest else "x"]


def spellings_of(parser: argparse.ArgumentParser, dest: str, underscores: bool) -> list[list[str]]:
    known = parser._option_string_actions
    out: list[list[str]] = []
    for spelling, action in known.items():
        if action.dest != dest:
            continue
        v = value_for(action)
        out.append([spelling, *v])
        if v:
            out.append([f"{spelling}={v[0]}"])
        if underscores and spelling.startswith("--") and "-" in spelling[2:]:
            out.append(["--" + spelling[2:].replace("-", "_"), *v])
        if spelling.startswith("--"):
            for n in range(4, len(spelling)):
                out.append([spelling[:n], *v])
    return out


def outcome(engine: str, parser: argparse.ArgumentParser, args: list[str]) -> dict:
    # The real command line first, for its outcome (vLLM: the CLI's root parser, whose
    # `serve` rewrites --model); then the same parser level with every dest preset to a
    # sentinel, so the dests that argparse set are the ones no longer the sentinel.
    full = (lambda a: parser._sm121_root.parse_args(["serve", "m", *a])) if engine == "vllm" else (lambda a: parser.parse_args(["--model-path", "m", *a]))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            full(args)
    except SystemExit:
        text = err.getvalue().strip().splitlines()
        return {"args": args, "error": text[-1].split(": error: ", 1)[-1] if text else "exit"}
    except Exception as e:  # a ValueError raised by vLLM's own pre-parsing
        return {"args": args, "error": f"{type(e).__name__}: {e}"}
    sentinel = object()
    ns = argparse.Namespace(**{a.dest: sentinel for a in parser._actions if a.dest != argparse.SUPPRESS})
    model = ["m"] if engine == "vllm" else ["--model-path", "m"]
    got = vars(parser.parse_args([*model, *args], namespace=ns))
    # The model given before the case is set in every parse: a dest only when the case changed it.
    changed = sorted(k for k, v in got.items() if v is not sentinel and not (k in ("model_tag", "model_path") and v == "m"))
    return {"args": args, "dests": changed}


def main() -> None:
    engine, dests = sys.argv[1], [d for d in sys.argv[2].split(",") if d]
    if engine == "vllm":
        from vllm.entrypoints.cli.serve import ServeSubcommand
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        root = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
        sub = root.add_subparsers(required=False, dest="subparser")
        parser = ServeSubcommand().subparser_init(sub)
        parser._sm121_root = root
    else:
        parser = sglang_parser()
    if sys.argv[2] == "-":
        # The cases of a JSON list on stdin (test/e2e/vllm-conformance.test.ts runs its corpus so).
        cases = json.load(sys.stdin)
    else:
        cases = [c for d in dests for c in spellings_of(parser, d, engine == "vllm")] + CASES[engine]
    seen, unique = set(), []
    for c in cases:
        if tuple(c) not in seen:
            seen.add(tuple(c))
            unique.append(c)
    json.dump([outcome(engine, parser, c) for c in unique], sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

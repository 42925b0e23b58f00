"""What `vllm serve` does at start with an argument list, beyond its parser's options: the refusals
that sm121 makes at plan time are tested against these recorded answers
(test/fixtures/engine-options/vllm-<version>-starts.json).

    /work/venvs/vllm/bin/python scripts/engine-options/starts.py > test/fixtures/engine-options/vllm-0.33.0-starts.json

Each case runs the real code path of `vllm serve m ARGS`, as vllm/entrypoints/cli/main.py runs it:
the CLI's root parser (which reads a `--config` YAML file while it parses), the serve subcommand's
validate, then its cmd, up to the point where it would start an engine or an API server; that
point raises a sentinel instead, recorded as "starts". Anything the real code raises before it is
recorded as "error" with the exception's type and message. The `--config` cases run in a temporary
directory holding `present.yaml` (a valid config) and `present.json`; `absent.yaml` does not exist.
"""

import importlib.metadata
import json
import os
import sys
import tempfile

from extract import assume_cpu_platform  # the same platform rule as the option tables

CASES = [
    ["--headless"],
    ["--headless", "--api-server-count", "0"],
    ["--headless", "--api-server-count", "1"],
    ["--headless", "--api-server-count", "2"],
    ["--headless", "-asc", "4"],
    ["--headless", "--api-server-count=2"],
    ["--api-server-count", "1"],
    ["--api-server-count", "2"],
    ["--config", "absent.yaml"],
    ["--config", "present.yaml"],
    ["--config", "present.json"],
    ["--config=absent.yaml"],
    ["--headless", "--config", "absent.yaml"],
]


class Starts(Exception):
    pass


def starts(*_args, **_kwargs):
    raise Starts()


def main() -> None:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    version = importlib.metadata.version("vllm")
    assume_cpu_platform()
    # Older vLLMs log to stdout while they load: the record alone goes there.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    import vllm
    import vllm.entrypoints.cli.serve as serve
    from vllm.entrypoints.cli.serve import ServeSubcommand
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # before vLLM 0.11.1 it lived in vllm.utils
        from vllm.utils import FlexibleArgumentParser

    # Where the real code would start something: the engine (run_headless builds its engine args
    # first), several API servers, or the one API server in this process.
    vllm.AsyncEngineArgs.from_cli_args = starts
    serve.run_multi_api_server = starts

    class Loop:
        @staticmethod
        def run(coro):
            coro.close()
            raise Starts()

    serve.uvloop = Loop
    out = []
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        with open("present.yaml", "w") as f:
            f.write("max-model-len: 1024\n")
        with open("present.json", "w") as f:
            f.write("{}\n")
        for case in CASES:
            root = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
            sub = root.add_subparsers(required=False, dest="subparser")
            cmd = ServeSubcommand()
            cmd.subparser_init(sub).set_defaults(dispatch_function=cmd.cmd)
            try:
                args = root.parse_args(["serve", "m", *case])
                cmd.validate(args)
                args.dispatch_function(args)
                out.append({"args": case, "outcome": "returned"})
            except Starts:
                out.append({"args": case, "outcome": "starts"})
            except SystemExit as e:
                out.append({"args": case, "outcome": "error", "error": f"SystemExit: {e.code}"})
            except Exception as e:  # the real code's own refusal
                out.append({"args": case, "outcome": "error", "error": f"{type(e).__name__}: {e}"})
    json.dump({"engine": "vllm", "version": version, "cases": out}, real_stdout, indent=1)
    real_stdout.write("\n")


if __name__ == "__main__":
    main()

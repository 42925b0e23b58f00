"""What real SGLang makes of an API key handed over in its --config YAML, as sm121 writes it.

    /work/venvs/sglang/bin/python scripts/engine-options/config-keys.py \
        < test/fixtures/engine-options/sglang-config-keys.in.json \
        > test/fixtures/engine-options/sglang-config-keys.json

The input is a JSON list of keys; each is written into a file exactly as sm121's start script
writes it on the node (`api-key: '<key, each ' doubled>'`, a YAML single-quoted scalar), and the
command line `--model-path m --config <file>` goes through what prepare_server_args
(sglang/srt/server_args.py) does with it: ConfigArgumentMerger turns the YAML back into
`--api-key <key>` in front of argv, then the real parser reads it. The outcome is the api_key the
parser set, or argparse's error as SGLang prints it.
"""

import contextlib
import io
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from extract import sglang_parser  # noqa: E402
from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger  # noqa: E402


def outcome(key: str) -> dict:
    parser = sglang_parser()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "api-key.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("api-key: '" + key.replace("'", "''") + "'\n")
        argv = ["--model-path", "m", "--config", path]
        err = io.StringIO()
        try:
            merged = ConfigArgumentMerger(parser).merge_config_with_args(argv)
            with contextlib.redirect_stderr(err):
                ns = parser.parse_args(merged)
        except SystemExit:
            lines = err.getvalue().strip().splitlines()
            msg = lines[-1].split(": error: ", 1)[-1] if lines else "exit"
            return {"key": key, "error": msg}
        except Exception as e:  # the YAML loader's own refusals
            return {"key": key, "error": f"{type(e).__name__}: {e}"}
    return {"key": key, "apiKey": ns.api_key}


def main() -> None:
    keys = json.load(sys.stdin)
    json.dump([outcome(k) for k in keys], sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

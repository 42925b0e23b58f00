"""Writes the option table of an engine's real command-line parser as JSON.

Run with the engine installed (see README.md beside this file):
    /work/venvs/vllm/bin/python scripts/engine-options/extract.py vllm > src/engines/options/vllm-0.33.0.json
    /work/venvs/sglang/bin/python scripts/engine-options/extract.py sglang > src/engines/options/sglang-0.5.23.json

The table is what argparse itself matches against: every string in the parser's
_option_string_actions (long, short, hidden aliases, --no-/--disable- negations), grouped by
the action it selects, with that action's nargs, choices, value type, and the name argparse
prints in its errors. Nothing is written by hand: sm121's recipe check and the test site's fake
engine read these files.
"""

import argparse
import importlib.metadata
import json
import os
import sys


def assume_cpu_platform() -> None:
    """With SM121_ASSUME_CPU=1: a CUDA build of vLLM before 0.11 infers its platform from a GPU
    ("Failed to infer device type") while it builds the parser; its CPU platform is chosen when its
    version names cpu. The options argparse knows are the same; nothing here runs a model."""
    if os.environ.get("SM121_ASSUME_CPU") != "1":
        return
    import importlib.metadata as md

    real = md.version

    def version(name: str) -> str:
        v = real(name)
        return f"{v}+cpu" if name == "vllm" and "cpu" not in v else v

    md.version = version


def vllm_parser() -> argparse.ArgumentParser:
    # `vllm serve` as vllm/entrypoints/cli/main.py builds it: the serve subparser of the CLI parser.
    from vllm.entrypoints.cli.serve import ServeSubcommand
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError:  # before vLLM 0.11.1 it lived in vllm.utils
        from vllm.utils import FlexibleArgumentParser

    root = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    subparsers = root.add_subparsers(required=False, dest="subparser")
    return ServeSubcommand().subparser_init(subparsers)


def sglang_parser() -> argparse.ArgumentParser:
    # prepare_server_args (sglang/srt/server_args.py) builds exactly this parser.
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    return parser


def nargs_of(action: argparse.Action):
    if action.nargs is None:
        return 1
    return action.nargs  # 0, an int, "?", "*", "+" or argparse.REMAINDER ("...")


def type_name(action: argparse.Action):
    t = action.type
    if t is None:
        return None
    return getattr(t, "__name__", type(t).__name__)


def table(engine: str) -> dict:
    parser = vllm_parser() if engine == "vllm" else sglang_parser()
    by_action: dict[int, dict] = {}
    for spelling, action in parser._option_string_actions.items():
        entry = by_action.get(id(action))
        if entry is None:
            entry = {
                "dest": action.dest,
                # argparse's _get_action_name: what "argument X: ..." errors print.
                "name": argparse._get_action_name(action),
                "spellings": [],
                "nargs": nargs_of(action),
                "choices": None if action.choices is None else [str(c) for c in action.choices],
                "type": type_name(action),
                "required": bool(action.required),
                "action": type(action).__name__,
            }
            by_action[id(action)] = entry
        entry["spellings"].append(spelling)
    # Kept in the parser's own order: argparse lists the matches of an ambiguous abbreviation in it.
    options = list(by_action.values())
    positionals = [
        {"dest": a.dest, "nargs": nargs_of(a), "required": bool(a.required)}
        for a in parser._actions
        if not a.option_strings
    ]
    return {
        "engine": engine,
        "version": importlib.metadata.version(engine),
        "python": ".".join(map(str, sys.version_info[:3])),
        "prog": parser.prog,
        "usage": parser.format_usage().strip(),
        "allowAbbrev": parser.allow_abbrev,
        # vLLM's FlexibleArgumentParser rewrites "_" to "-" in "--name" (up to "=" or ".")
        # before argparse sees it; SGLang's plain ArgumentParser does not.
        "underscoresAsDashes": type(parser).__name__ == "FlexibleArgumentParser",
        "prefixChars": parser.prefix_chars,
        "options": options,
        "positionals": positionals,
    }


def main() -> None:
    if len(sys.argv) != 2 or sys.argv[1] not in ("vllm", "sglang"):
        sys.exit("usage: extract.py vllm|sglang")
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    version = importlib.metadata.version(sys.argv[1])
    assume_cpu_platform()
    # Older vLLMs log to stdout while they load: the table alone goes there.
    out, sys.stdout = sys.stdout, sys.stderr
    data = {**table(sys.argv[1]), "version": version}
    json.dump(data, out, indent=1)
    out.write("\n")


if __name__ == "__main__":
    main()

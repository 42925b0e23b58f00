#!/usr/bin/env python3
"""Put the cluster JSON's model into this node's Hugging Face cache.

Test-site edition: writes a small stub checkpoint (config.json + refs) under
$HF_HOME/hub/models--<org>--<name> (HF_HOME defaults to ~/.cache/huggingface).
"""
import argparse
import datetime
import hashlib
import json
import os
import sys


def main() -> int:
    parser = argparse.ArgumentParser(prog="download_model.py")
    parser.add_argument("--config", required=True, help="the DGPP cluster JSON")
    args = parser.parse_args()
    site = os.environ.get("SIM_SITE_DIR")
    if site:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(os.path.join(site, "dgpp-calls.log"), "a", encoding="utf-8") as log:
            node = os.environ.get("SIM_NODE_NAME", "unknown")
            log.write(f"{stamp} {node} download_model.py --config {args.config}\n")
    try:
        with open(args.config, encoding="utf-8") as f:
            model = json.load(f)["model"]
    except (OSError, ValueError, KeyError) as err:
        print(f"download_model.py: cannot read the model from {args.config}: {err}", file=sys.stderr)
        return 1
    hf_home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    repo = os.path.join(hf_home, "hub", "models--" + model.replace("/", "--"))
    rev = hashlib.sha1(model.encode()).hexdigest()
    snapshot = os.path.join(repo, "snapshots", rev)
    os.makedirs(snapshot, exist_ok=True)
    os.makedirs(os.path.join(repo, "refs"), exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w", encoding="utf-8") as f:
        f.write(rev)
    with open(os.path.join(snapshot, "config.json"), "w", encoding="utf-8") as f:
        json.dump({"_name_or_path": model, "model_type": "test-site-stub"}, f)
    print(f"Downloaded {model} to {snapshot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

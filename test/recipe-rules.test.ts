/**
 * Invalid recipes, part 2: rules across fields (engine and deploy target, fixed ports, owned flags,
 * secrets, mounts) and the path rules that keep recipe text out of the shell. Exact messages.
 */
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../src/engines/recipes";
import { errorsOf } from "./helpers/spec";

const F = "recipes/x.toml";
const BASE = [
  'engine = "vllm"',
  'model = "Qwen/Qwen3-8B"',
  'image = "nvcr.io/nvidia/vllm:26.01-py3"',
  "port = 8000",
  "",
].join("\n");
const DGPP = ['engine = "dgpp"', 'deploy = "native"', 'model = "Qwen/Qwen3.8-27B"', "[dgpp]", ""].join("\n");

const bad = (text: string): string[] => errorsOf(() => parseRecipe(F, text));

type Case = [title: string, text: string, message: string];

describe("engine and deploy target go together", () => {
  const cases: Case[] = [
    [
      "dgpp not native",
      'engine = "dgpp"\ndeploy = "tmux"\nmodel = "Qwen/Q"\n[dgpp]\n',
      `${F}:2:1: deploy: dgpp is head-coordinated and runs as deploy = "native", not "tmux"; set deploy = "native"`,
    ],
    [
      "gr8 not in docker",
      'engine = "gr8"\ndeploy = "tmux"\nmodel = "zai-org/GLM-5.3-FP8"\n',
      `${F}:2:1: deploy: gr8 ships as a container image, not "tmux"; set deploy = "docker"`,
    ],
    [
      "a port on gr8",
      'engine = "gr8"\nmodel = "zai-org/GLM-5.3-FP8"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\nport = 8100\n',
      `${F}:4:1: port: gr8 serves its API on a fixed port (8100 on the first peer), so port is not used; remove port`,
    ],
    [
      "a port on dgpp",
      'engine = "dgpp"\ndeploy = "native"\nport = 18080\n[dgpp]\n',
      `${F}:3:1: port: dgpp serves its API on a fixed port ([dgpp].http_port), so port is not used; remove port`,
    ],
    [
      "a served name on gr8",
      'engine = "gr8"\nmodel = "zai-org/GLM-5.3-FP8"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\n' +
        'served_model_name = "glm-5.3"\n',
      `${F}:4:1: served_model_name: gr8 serves the model under its repo id (zai-org/GLM-5.3-FP8); ` +
        "it takes no served name; remove served_model_name",
    ],
    [
      "[dgpp] on a vllm recipe",
      `${BASE}[dgpp]\ndir = "~/dgpp"\n`,
      `${F}:5:1: dgpp: a [dgpp] block belongs to engine = "dgpp", not "vllm"; ` +
        'remove the [dgpp] block or set engine = "dgpp"',
    ],
    [
      "only [dgpp.engine] on a vllm recipe",
      `${BASE}[dgpp.engine]\nx = 1\n`,
      `${F}:5:1: dgpp: a [dgpp] block belongs to engine = "dgpp", not "vllm"; ` +
        'remove the [dgpp] block or set engine = "dgpp"',
    ],
    [
      "profiles_dir on a docker recipe",
      `${BASE}profiles_dir = "x/profiles"\n`,
      `${F}:5:1: profiles_dir: profiles belong to deploy = "script" recipes; remove profiles_dir`,
    ],
    [
      "mounts on tmux",
      'engine = "vllm"\ndeploy = "tmux"\nmodel = "Qwen/Q"\nport = 8000\nmounts = ["/data:/models"]\n',
      `${F}:5:1: mounts: mounts apply to container targets, not "tmux"; remove mounts`,
    ],
    [
      "repo without rev",
      `${DGPP}repo = "https://github.com/HawkBearPig/dgpp.git"\n`,
      `${F}:5:1: dgpp.repo: repo and rev go together; set both to provision DGPP, or neither when it is pre-installed`,
    ],
    [
      "rev without repo",
      `${DGPP}rev = "v0.4.1"\n`,
      `${F}:5:1: dgpp.rev: repo and rev go together; set both to provision DGPP, or neither when it is pre-installed`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("reports the deploy target and the image of a dgpp recipe left on docker at once", () => {
    expect(bad('engine = "dgpp"\nmodel = "Qwen/Q"\n[dgpp]\n')).toEqual([
      `${F}:1:1: deploy: dgpp is head-coordinated and runs as deploy = "native", not "docker"; set deploy = "native"`,
      `${F}:1:1: image: deploy = "docker" needs an image; add image = "<registry>/<name>:<tag>"`,
    ]);
  });
});

describe("flags that sm121 owns are refused in args", () => {
  const cases: Case[] = [
    [
      "--host",
      `${BASE}args = ["--host", "0.0.0.0"]\n`,
      `${F}:5:9: args[0]: --host is set by sm121; remove it (sm121 sets it from the node's BIND/ip)`,
    ],
    [
      "--port=",
      `${BASE}args = ["--port=9000"]\n`,
      `${F}:5:9: args[0]: --port is set by sm121; remove it (set \`port\` instead)`,
    ],
    [
      "--tensor-parallel-size=",
      `${BASE}args = ["--max-model-len", "4096", "--tensor-parallel-size=2"]\n`,
      `${F}:5:36: args[2]: --tensor-parallel-size is set by sm121; remove it (set \`tp\` instead)`,
    ],
    [
      "--api-key on its own line",
      `${BASE}args = [\n  "--enable-prefix-caching",\n  "--api-key",\n  "sk-1",\n]\n`,
      `${F}:7:3: args[1]: --api-key is set by sm121; remove it (put API_KEY in the node .env ` +
        "or a Pulumi secret; a flag would show it in argv)",
    ],
    [
      "--served-model-name",
      `${BASE}args = ["--served-model-name", "q"]\n`,
      `${F}:5:9: args[0]: --served-model-name is set by sm121; remove it (set \`served_model_name\` instead)`,
    ],
    [
      "--model on gr8",
      'engine = "gr8"\nmodel = "a/b"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\nargs = ["--model", "c/d"]\n',
      `${F}:4:9: args[0]: --model is set by sm121; remove it (set \`model\` instead)`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("reports every owned flag of one file at once", () => {
    expect(bad(`${BASE}args = ["-tp", "2", "--headless", "--master_port=1"]\n`)).toEqual([
      `${F}:5:9: args[0]: -tp (vllm reads it as --tensor-parallel-size) is set by sm121; ` +
        "remove it (set `tp` instead)",
      `${F}:5:21: args[2]: --headless is set by sm121; remove it (sm121 adds it on vLLM ranks above 0)`,
      `${F}:5:35: args[3]: --master_port (vllm reads it as --master-port) is set by sm121; ` +
        "remove it (sm121 derives it from `port`)",
    ]);
  });

  it("SGLang's rendezvous flags are owned too", () => {
    const text =
      'engine = "sglang"\nmodel = "Q/Q"\nimage = "lmsysorg/sglang:v0.5"\nport = 30000\n' +
      'args = ["--tp-size", "2", "--dist-init-addr=1.2.3.4:5"]\n';
    expect(bad(text)).toEqual([
      `${F}:5:9: args[0]: --tp-size is set by sm121; remove it (set \`tp\` instead)`,
      `${F}:5:27: args[2]: --dist-init-addr is set by sm121; ` +
        "remove it (sm121 derives it from rank 0's ip and `port`)",
    ]);
  });

  it("lets other flags through untouched", () => {
    const r = parseRecipe(F, `${BASE}args = ["--max-model-len", "4096", "--enable-prefix-caching", "--seed=7"]\n`);
    expect(r.args).toEqual(["--max-model-len", "4096", "--enable-prefix-caching", "--seed=7"]);
  });
});

describe("secrets never sit in a recipe", () => {
  const cases: Case[] = [
    [
      "HF_TOKEN",
      `${BASE}[env]\nHF_TOKEN = "hf_x"\n`,
      `${F}:6:1: env.HF_TOKEN: HF_TOKEN is a secret and a recipe is plain text; ` +
        "set it with `pulumi config set --secret sm121:hfToken` or keep it in the node .env",
    ],
    [
      "API_KEY",
      `${BASE}[env]\nAPI_KEY = "x"\n`,
      `${F}:6:1: env.API_KEY: API_KEY is a secret and a recipe is plain text; ` +
        "set it with `pulumi config set --secret sm121:apiKey` or keep it in the node .env",
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("never echoes the secret value", () => {
    for (const m of bad(`${BASE}[env]\nHF_TOKEN = "hf_secret_value_123"\n`))
      expect(m).not.toContain("hf_secret_value_123");
  });
});

describe("mounts are SRC:DST[:ro|rw] with absolute paths", () => {
  const cases: Case[] = [
    [
      "a relative source",
      `${BASE}mounts = ["data:/models"]\n`,
      `${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`,
    ],
    [
      "a relative target",
      `${BASE}mounts = ["/data:models"]\n`,
      `${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`,
    ],
    [
      "an unknown mode",
      `${BASE}mounts = ["/data:/models:rx"]\n`,
      `${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`,
    ],
    [
      "a space in the second mount",
      `${BASE}mounts = ["/a:/b", "/c d:/e"]\n`,
      `${F}:5:20: mounts[1]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("accepts ~/ sources and both modes", () => {
    expect(
      parseRecipe(F, `${BASE}mounts = ["~/gr8-cache:/models", "/srv/a:/a:ro", "/srv/b:/b:rw"]\n`).mounts,
    ).toHaveLength(3);
  });
});

describe("model, image and paths keep shell text out", () => {
  const cases: Case[] = [
    [
      "a .. segment in model",
      BASE.replace("Qwen/Qwen3-8B", "../etc/passwd"),
      `${F}:2:1: model: model contains a ".." segment; use a path without ..`,
    ],
    [
      "a shell character in model",
      BASE.replace("Qwen/Qwen3-8B", "Qwen/Qwen3;rm -rf"),
      `${F}:2:1: model: model may contain only letters, digits and ~ @ : / . _ + -; ` +
        "remove spaces, quotes and shell characters",
    ],
    [
      "a leading dash in model",
      BASE.replace("Qwen/Qwen3-8B", "-Qwen"),
      `${F}:2:1: model: model starts with "-"; a leading dash would be read as a flag`,
    ],
    [
      "a command substitution in image",
      BASE.replace("26.01-py3", "$(id)"),
      `${F}:3:1: image: is not a docker image reference; write e.g. nvcr.io/nvidia/vllm:26.01-py3`,
    ],
    [
      "capitals in image",
      BASE.replace("nvcr.io", "Nvcr.io"),
      `${F}:3:1: image: is not a docker image reference; write e.g. nvcr.io/nvidia/vllm:26.01-py3`,
    ],
    [
      "a space in the dgpp dir",
      `${DGPP}dir = "~/dg pp"\n`,
      `${F}:5:1: dgpp.dir: dir may contain only letters, digits and ~ @ : / . _ + -; ` +
        "remove spaces, quotes and shell characters",
    ],
    [
      "a .. segment in the dgpp dir",
      `${DGPP}dir = "~/../x"\n`,
      `${F}:5:1: dgpp.dir: dir contains a ".." segment; use a path without ..`,
    ],
    [
      "a shell character in the repo",
      `${DGPP}repo = "https://x/y.git;rm"\nrev = "v1"\n`,
      `${F}:5:1: dgpp.repo: repo may contain only letters, digits and ~ @ : / . _ + -; ` +
        "remove spaces, quotes and shell characters",
    ],
    [
      "a .. segment in the release",
      `${DGPP}release = "../r"\n`,
      `${F}:5:1: dgpp.release: release contains a ".." segment; use a path without ..`,
    ],
    [
      "a .. segment in profiles_dir",
      'deploy = "script"\nprofiles_dir = "../profiles"\n',
      `${F}:2:1: profiles_dir: profiles_dir contains a ".." segment; use a path without ..`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));
});

/**
 * Recipe paths and names: `..` segments, `~user`, absolute paths where a relative one is meant,
 * leading dashes that a program would read as a flag, git transports that run programs, file
 * names that are no recipe names, and two recipes with one name.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadRecipes, parseRecipe } from "../../src/engines/recipes";
import { cleanTemp, rejected, tempDir } from "./helpers";

afterAll(cleanTemp);

const F = "recipes/x.toml";
const BASE = [
  'engine = "vllm"',
  'model = "Qwen/Qwen3-8B"',
  'image = "nvcr.io/nvidia/vllm:26.01-py3"',
  "port = 8000",
  "",
].join("\n");
const DGPP = ['engine = "dgpp"', 'deploy = "native"', 'model = "Qwen/Qwen3.8-27B-NVFP4"', "[dgpp]", ""].join("\n");
const SCRIPT = ['engine = "vllm"', 'deploy = "script"', ""].join("\n");
const bad = (text: string, file = F): string[] => rejected(() => parseRecipe(file, text), file);

const TILDE =
  "starts with ~user, which the node does not expand; write ~/ for the node user's home or an absolute path";
const DASH = 'starts with "-"; a leading dash would be read as a flag';
const DOTS = 'contains a ".." segment; use a path without ..';
const PROGRAM = 'start the entrypoint with the program, e.g. ["vllm", "serve"]';

type Case = [title: string, text: string, messages: string[]];

describe("paths", () => {
  const cases: Case[] = [
    ["a model with .. segments", BASE.replace("Qwen/Qwen3-8B", "../../etc/passwd"), [`${F}:2:1: model: model ${DOTS}`]],
    [
      "a model that starts with a dash",
      BASE.replace("Qwen/Qwen3-8B", "--trust-remote-code"),
      [`${F}:2:1: model: model ${DASH}`],
    ],
    ["a model under ~root", BASE.replace("Qwen/Qwen3-8B", "~root/models/q"), [`${F}:2:1: model: model ${TILDE}`]],
    ["a DGPP dir with ..", `${DGPP}dir = "~/dgpp/../../.ssh"\n`, [`${F}:5:1: dgpp.dir: dir ${DOTS}`]],
    ["a DGPP dir under ~root", `${DGPP}dir = "~root/dgpp"\n`, [`${F}:5:1: dgpp.dir: dir ${TILDE}`]],
    ["a DGPP dir that is a flag", `${DGPP}dir = "-rf"\n`, [`${F}:5:1: dgpp.dir: dir ${DASH}`]],
    ["a DGPP release that is a flag", `${DGPP}release = "--force"\n`, [`${F}:5:1: dgpp.release: release ${DASH}`]],
    ["a DGPP release under ~x", `${DGPP}release = "~x"\n`, [`${F}:5:1: dgpp.release: release ${TILDE}`]],
    [
      "a DGPP repo that is a flag",
      `${DGPP}repo = "--upload-pack=touch"\nrev = "v1"\n`,
      [
        `${F}:5:1: dgpp.repo: repo may contain only letters, digits and ~ @ : / . _ + -; remove spaces, ` +
          `quotes and shell characters`,
        `${F}:5:1: dgpp.repo: repo ${DASH}`,
      ],
    ],
    [
      "a DGPP repo with a leading dash",
      `${DGPP}repo = "-oProxyCommand"\nrev = "v1"\n`,
      [`${F}:5:1: dgpp.repo: repo ${DASH}`],
    ],
    [
      "git's ext:: transport (runs a program)",
      `${DGPP}repo = "ext::/tmp/evil.sh"\nrev = "v1"\n`,
      [
        `${F}:5:1: dgpp.repo: repo uses git's "<transport>::" form, which runs a helper program (ext:: ` +
          `runs any command); use an https://, ssh:// or git@host:path URL`,
      ],
    ],
    [
      "git's fd:: transport",
      `${DGPP}repo = "fd::3"\nrev = "v1"\n`,
      [
        `${F}:5:1: dgpp.repo: repo uses git's "<transport>::" form, which runs a helper program (ext:: ` +
          `runs any command); use an https://, ssh:// or git@host:path URL`,
      ],
    ],
    [
      "a rev that is a flag",
      `${DGPP}repo = "https://x/dgpp.git"\nrev = "--orphan"\n`,
      [`${F}:6:1: dgpp.rev: is not a commit or tag; write e.g. 3f2d7d7 or v0.4.1`],
    ],
    [
      "an absolute profiles_dir",
      `${SCRIPT}profiles_dir = "/etc/sm121"\n`,
      [`${F}:3:1: profiles_dir: profiles_dir is relative to the recipes directory; write e.g. qwen38-flash/profiles`],
    ],
    [
      "a profiles_dir under ~",
      `${SCRIPT}profiles_dir = "~/profiles"\n`,
      [`${F}:3:1: profiles_dir: profiles_dir is relative to the recipes directory; write e.g. qwen38-flash/profiles`],
    ],
    [
      "a profiles_dir that climbs out",
      `${SCRIPT}profiles_dir = "../../../etc"\n`,
      [`${F}:3:1: profiles_dir: profiles_dir ${DOTS}`],
    ],
    [
      "a mount source with ..",
      `${BASE}mounts = ["/data/../../etc:/models"]\n`,
      [`${F}:5:11: mounts[0]: contains a ".." segment; use paths without ..`],
    ],
    [
      "a mount target with ..",
      `${BASE}mounts = ["/data:/models/../root"]\n`,
      [`${F}:5:11: mounts[0]: contains a ".." segment; use paths without ..`],
    ],
    ["a mount source under ~root", `${BASE}mounts = ["~root/.ssh:/models"]\n`, [`${F}:5:11: mounts[0]: ${TILDE}`]],
    [
      "a relative mount source",
      `${BASE}mounts = ["data:/models"]\n`,
      [`${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`],
    ],
    [
      "a relative mount target",
      `${BASE}mounts = ["/data:models"]\n`,
      [`${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`],
    ],
    [
      "a mount with an unknown mode",
      `${BASE}mounts = ["/data:/models:z"]\n`,
      [`${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`],
    ],
    [
      "a mount of the whole root",
      `${BASE}mounts = ["/:/"]\n`,
      [`${F}:5:11: mounts[0]: is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro`],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));

  it("accepts ~ and ~/ for the node user's home", () => {
    const r = parseRecipe(F, `${BASE}mounts = ["~/gr8-cache:/models", "~:/home-of-user:ro"]\n`);
    expect(r.mounts).toEqual(["~/gr8-cache:/models", "~:/home-of-user:ro"]);
    expect(parseRecipe(F, `${DGPP}dir = "~/dgpp"\n`).dgpp?.dir).toBe("~/dgpp");
  });
});

describe("the entrypoint's program", () => {
  const cases: Case[] = [
    [
      "a program that is a flag of exec",
      `${BASE}entrypoint = ["-a", "evil", "vllm", "serve"]\n`,
      [
        `${F}:5:15: entrypoint[0]: the program "-a" starts with "-", ` +
          `so docker and exec would read it as an option; ${PROGRAM}`,
      ],
    ],
    [
      "a program that is a long flag",
      `${BASE}entrypoint = ["--privileged"]\n`,
      [
        `${F}:5:15: entrypoint[0]: the program "--privileged" starts with "-", ` +
          `so docker and exec would read it as an option; ${PROGRAM}`,
      ],
    ],
    [
      "an empty program (docker would run the image's own entrypoint)",
      `${BASE}entrypoint = ["", "serve"]\n`,
      [`${F}:5:15: entrypoint[0]: the program is empty; ${PROGRAM}`],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));

  it("lets later elements start with dashes: they are arguments", () => {
    expect(
      parseRecipe(F, `${BASE}entrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n`).entrypoint,
    ).toEqual(["python3", "-m", "vllm.entrypoints.openai.api_server"]);
  });
});

describe("a recipe without name = takes its file name, which must be a recipe name", () => {
  const named = (stem: string) => `recipes/${stem}.toml`;
  const msg = (stem: string, shown = stem) =>
    `${named(shown)}:1:1: name: the recipe is named after its file, and "${shown}" is not a recipe name; ` +
    `rename the file to lower-case letters, digits and - (at most 48), or set name = "<name>"`;
  const cases: Array<[title: string, stem: string, shown?: string]> = [
    ["a semicolon", "a;b"],
    ["command substitution", "$(id)"],
    ["a space and capitals", "Qwen 3"],
    ["a leading dash", "-rf"],
    ["dots", "qwen3.8"],
    ["a zero-width space", "qwen\u200b3", "qwen\\u200B3"],
    ["a newline", "qwen\n3", "qwen\\u000A3"],
    ["49 letters", "q".repeat(49)],
  ];
  it.each(cases)("%s", (_, stem, shown) => expect(bad(BASE, named(stem))).toEqual([msg(stem, shown)]));

  it("is fine with name = set", () => {
    expect(parseRecipe(named("Qwen 3"), `name = "qwen3"\n${BASE}`).name).toBe("qwen3");
  });
});

describe("two recipe files with one name", () => {
  it("is refused instead of the later file silently replacing the earlier", () => {
    const dir = tempDir("recipes");
    writeFileSync(join(dir, "a.toml"), `${BASE}served_model_name = "first"\n`);
    writeFileSync(join(dir, "b.toml"), `name = "a"\n${BASE}served_model_name = "second"\n`);
    expect(rejected(() => loadRecipes(dir, "recipes"), "recipes/b.toml")).toEqual([
      'recipes/b.toml:1:1: name: recipe name "a" is already used by recipes/a.toml; give each recipe its own name',
    ]);
  });
});

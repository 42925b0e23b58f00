/**
 * Accepted but unusual strings (engine arguments with spaces, quotes, `$(...)`, globs, a lone
 * dash; env values with quotes; profile values with `;` and `'`) must reach the process exactly.
 * Each rendered script is parsed with `bash -n` and then run for real with fake `docker`, `git`
 * and engine programs that record their argv, and the argv must round-trip byte for byte.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseRecipe } from "../../src/engines/recipes";
import { parseSite } from "../../src/recipe/site";
import type { Recipe } from "../../src/recipe/types";
import { renderSite } from "../../src/render/deployment";
import { dgppBuildScript } from "../../src/dgpp/files.render";
import type { NodeBundle } from "../../src/render/types";
import { verifyScript } from "../../src/serve/readiness";
import { writeScript } from "../../src/serve/steps";
import { bashSyntax, cleanTemp, runWithFakes, tempDir, tempProject, tomlStr } from "./helpers";

afterAll(cleanTemp);

/**
 * Legitimate engine arguments that a shell would split, expand or run if they were not quoted:
 * values of real vLLM options (the recipe check reads args as vLLM's parser does, so each must
 * belong to an option; --allowed-media-domains takes any number of values).
 */
const ODD = [
  "--chat-template",
  "{% for m in messages %}{{ m['content'] }}{% endfor %}",
  "--allowed-media-domains",
  "a b  c",
  "'single'",
  '"double"',
  "$(touch pwned)",
  "`touch pwned`",
  "a;touch pwned",
  "a&&b",
  "a|b",
  "${IFS}",
  "*",
  "?",
  "[a]",
  "{a,b}",
  "~",
  "~root",
  "-",
  "",
  "tab\there",
  "ünïcödé ✓",
  "\\back\\slash",
  "!event",
  "#hash",
  "a=b=c",
  "%s%n",
];
const ENV: Record<string, string> = {
  A_B: "with  space",
  Q: `it's "quoted" $(touch pwned) \`x\``,
  G: "*",
  E: "",
  U: "ünï ✓",
};

function recipe(deploy: string, entrypoint: string[]): Recipe {
  const env = Object.entries(ENV)
    .map(([k, v]) => `${k} = ${tomlStr(v)}`)
    .join("\n");
  const text =
    `engine = "vllm"\ndeploy = "${deploy}"\nmodel = "Qwen/Qwen3-8B"\n` +
    `image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n` +
    `entrypoint = [${entrypoint.map(tomlStr).join(", ")}]\n` +
    `args = [${ODD.map(tomlStr).join(", ")}]\n${
      deploy === "docker" ? 'mounts = ["~/models:/models:ro"]\n' : ""
    }[env]\n${env}\n`;
  return parseRecipe(`recipes/odd-${deploy}.toml`, text);
}

/** One local node whose stateDir is a temporary directory; the deployment runs `r`. */
function bundle(r: Recipe, dir: string): NodeBundle {
  const site = parseSite(
    "Pulumi.s.yaml",
    "s",
    `config:\n  sm121:nodes:\n    n1: { host: local, ip: 127.0.0.1, stateDir: ${dir}/state }\n` +
      `  sm121:deployments:\n    - { recipe: ${r.name}, nodes: [n1] }\n`,
  );
  const b = renderSite(site, new Map([[r.name, r]]), { root: dir })[0];
  const nb = b?.nodes[0];
  if (nb === undefined) throw new Error("no bundle rendered");
  return nb;
}

/** The NUL-separated `env -0` of a bash that ran `lines`, as a map. */
function envAfter(lines: string, dir: string): Record<string, string> {
  const r = runWithFakes(`${lines}\nenv -0`, [], dir);
  return Object.fromEntries(
    r.stdout
      .split("\0")
      .filter((l) => l !== "")
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
}

describe("deploy = docker", () => {
  const dir = tempDir("docker");
  const nb = bundle(recipe("docker", ["python3", "-m", "vllm.entrypoints.openai.api_server"]), dir);

  it("renders a start script that bash parses", () => {
    expect(bashSyntax(nb.start)).toBe("");
  });

  it("passes the entrypoint, the image and every argument to docker exactly", () => {
    const run = runWithFakes(nb.start, ["docker"], dir);
    expect([run.status, run.stderr]).toEqual([0, ""]);
    const call = run.calls.find((c) => c[1] === "run") ?? [];
    const at = call.indexOf("--entrypoint");
    expect(call.slice(at + 1, at + 3)).toEqual(["python3", "nvcr.io/nvidia/vllm:26.01-py3"]);
    expect(call.slice(at + 3)).toEqual(nb.argv.slice(1));
    expect(nb.argv.slice(-ODD.length)).toEqual(ODD);
    expect(call[call.indexOf("-v") + 1]).toBe(`${dir}/models:/models:ro`);
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });

  it("writes an --env-file that docker reads literally (KEY=value, no quote processing)", () => {
    const file = nb.files.find((f) => f.path.endsWith("/engine.env"));
    const lines = (file?.content ?? "").split("\n").filter((l) => l !== "");
    const read = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
    expect(read).toMatchObject(ENV);
  });
});

describe.each(["tmux", "native"])("deploy = %s", (deploy) => {
  const dir = tempDir(deploy);
  const nb = bundle(recipe(deploy, ["fake-engine", "serve"]), dir);
  const runSh = nb.files.find((f) => f.path.endsWith("/run.sh"))?.content ?? "";

  it("renders start, stop, status and run.sh that bash parses", () => {
    expect([nb.start, nb.stop, nb.status, nb.logs, runSh].map(bashSyntax)).toEqual(["", "", "", "", ""]);
  });

  it("execs the engine with every argument exactly, and exports the env exactly", () => {
    const run = runWithFakes(runSh, ["fake-engine"], dir);
    expect([run.status, run.stderr]).toEqual([0, ""]);
    expect(run.calls).toEqual([["fake-engine", ...nb.argv.slice(1)]]);
    expect(nb.argv.slice(-ODD.length)).toEqual(ODD);
    const exports = runSh
      .split("\n")
      .filter((l) => l.startsWith("export "))
      .join("\n");
    expect(envAfter(exports, dir)).toMatchObject(ENV);
    expect(existsSync(join(dir, "pwned"))).toBe(false);
  });
});

describe("deploy = script: the rendered .env as the node's bash sources it", () => {
  const values: Record<string, string> = {
    A: "a;b && c | d 'e' * ? [x] ~ # not a comment",
    B: "ünïcödé ✓ {{ literal braces",
    C: "plain/value:1,2@3+4%5=6",
    EXTRA_VLLM_ARGS: "--x 'y' --z",
  };
  const profile = `# sm121-recipe: scripted\n${Object.entries(values)
    .map(([k, v]) => (k === "C" ? `${k}=${v}` : `${k}="${v}"`))
    .join("\n")}\nEXTRA_DOCKER_ARGS="-e V=1 -v {{cache}}:/cache:ro"\n`;

  it("writes it with the real write script, and bash reads back every value exactly", () => {
    const dir = tempDir("script");
    const root = tempProject({ "recipes/scripted/profiles/odd.env": profile.replace("{{ literal", "{ literal") });
    const site = parseSite(
      "Pulumi.s.yaml",
      "s",
      `config:\n  sm121:nodes:\n    n1:\n      host: local\n      ip: 127.0.0.1\n` +
        `      stateDir: ${dir}/state\n      env: { BIND: 127.0.0.1, PORT: 8000 }\n` +
        `      vars: { cache: /srv/cache }\n      recipes:\n` +
        `        scripted: { dir: ${dir}/recipe, container: scripted }\n  sm121:deployments:\n` +
        `    - { recipe: scripted, profile: odd, nodes: [n1] }\n`,
    );
    const recipes = new Map([
      ["scripted", parseRecipe("recipes/scripted.toml", readFileSync(join(root, "recipes/scripted.toml"), "utf8"))],
    ]);
    const nb = renderSite(site, recipes, { root })[0]?.nodes[0];
    if (nb === undefined) throw new Error("no bundle rendered");
    const write = writeScript(nb, { stamp: "20260101T000000Z", renderedAt: "2026-01-01T00:00:00Z", secrets: {} });
    expect(bashSyntax(write)).toBe("");
    expect(runWithFakes(write, [], dir).status).toBe(0);
    // A glob that is expanded would pick this file up.
    writeFileSync(join(dir, "recipe", "x-glob-bait"), "");
    const env = envAfter(`set -a; . ${dir}/recipe/.env; set +a`, join(dir, "recipe"));
    expect(env).toMatchObject({
      ...values,
      B: "ünïcödé ✓ { literal braces",
      EXTRA_DOCKER_ARGS: "-e V=1 -v /srv/cache:/cache:ro",
    });
    // start.sh splices EXTRA_DOCKER_ARGS unquoted: it must split into exactly the pair words.
    const splice = runWithFakes(
      `set -a; . ${dir}/recipe/.env; set +a; docker run $EXTRA_DOCKER_ARGS img`,
      ["docker"],
      join(dir, "recipe"),
    );
    expect(splice.calls).toEqual([["docker", "run", "-e", "V=1", "-v", "/srv/cache:/cache:ro", "img"]]);
  });
});

describe("DGPP provisioning: repo and rev reach git exactly", () => {
  it("runs the build script with a fake git and stub DGPP scripts", () => {
    const home = tempDir("dgpp");
    const repo = "git@github.com:HawkBearPig/dgpp+x.git";
    const rev = "release/v0.4.1_rc-2";
    const r = parseRecipe(
      "recipes/d.toml",
      `engine = "dgpp"\ndeploy = "native"\nmodel = "a/b"\n[dgpp]\nrepo = ${tomlStr(repo)}\n` +
        `rev = ${tomlStr(rev)}\ndir = "~/dgpp"\n`,
    );
    for (const f of ["scripts/release.sh", "scripts/dgpp-cluster"]) {
      mkdirSync(join(home, "dgpp", "scripts"), { recursive: true });
      writeFileSync(join(home, "dgpp", f), "#!/usr/bin/env bash\nexit 0\n", { mode: 0o755 });
    }
    mkdirSync(join(home, "dgpp", "dist"), { recursive: true });
    writeFileSync(join(home, "dgpp", "dist", "dgpp-1.tar.zst"), "");
    const script = dgppBuildScript(r);
    expect(bashSyntax(script)).toBe("");
    const run = runWithFakes(script, ["git"], home);
    expect([run.status, run.stdout.trim().split("\n").pop()]).toEqual([0, "SM121-DGPP-DONE"]);
    expect(run.calls).toContainEqual(["git", "remote", "set-url", "origin", repo]);
    expect(run.calls).toContainEqual(["git", "checkout", "-q", "--detach", rev]);
    expect(readFileSync(join(home, "dgpp", ".sm121-dgpp-rev"), "utf8")).toBe(`${rev}\n`);
  });
});

describe("proofs reach grep -F exactly", () => {
  it("finds proofs with quotes and substitutions literally, and runs none of them", () => {
    const dir = tempDir("proofs");
    const nb = bundle(recipe("docker", ["vllm", "serve"]), dir);
    const proofs = ['it\'s "ready" $(touch pwned)', "`touch pwned` *", "not in the log"];
    writeFileSync(join(dir, "engine.log"), `${proofs[0]}\n${proofs[1]}\n`);
    const script = verifyScript({ ...nb, logs: `cat ${dir}/engine.log` }, { timeoutS: 1, proofs });
    expect(bashSyntax(script)).toBe("");
    const run = runWithFakes(script, [], dir);
    expect(run.stdout.split("\n").filter((l) => l.includes('"kind":"proof"'))).toEqual([
      '@sm121 {"kind":"proof","index":0,"found":true}',
      '@sm121 {"kind":"proof","index":1,"found":true}',
      '@sm121 {"kind":"proof","index":2,"found":false}',
    ]);
    expect(runWithFakes("ls", [], dir).stdout).not.toContain("pwned");
  });
});

/**
 * `sm121 profiles`, `validate`, `render` and `down` on the simulated site after a real
 * `pulumi up`, with the real Pulumi CLI behind `down`: the profiles of the script recipe and the
 * nodes, validate failing on a broken profile that no deployment uses, the scripts of render run
 * on a node as up runs them, and one deployment stopped while the others serve (a protected node
 * refused without the allowance). Every --json output is checked against its schema.
 *
 * The blocks run in file order and the `down` block goes last: it stops deployments.
 */
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { profilesSchema, renderSchema, statusSchema, validateSchema } from "../src/cli/schemas";
import { json, servedSite, sm121, tableRows, type CliSite } from "./cli-helpers";
import { sshScript } from "./site/exec";
import type { SimNode } from "./site/site";
import { firstRecord, recordOfLine, recordsOf } from "../src/protocol";
import { modelsListed } from "../src/serve/readiness";

const AT = allocate(__filename);

let s: CliSite;

beforeAll(async () => {
  s = await servedSite("cliverbs", AT.site());
}, 300_000);

afterAll(() => s?.e.stop());

async function sh(n: SimNode, script: string): Promise<string> {
  return (await sshScript(s.e.site, n, script)).stdout;
}

/** `sm121` with the stack's Pulumi settings (backend, passphrase), as an operator's shell has them. */
const run = (args: string[], env: Record<string, string> = {}) =>
  sm121(s.e, args, { env: { ...s.e.pulumi.env, ...env }, timeoutMs: 240_000 });

describe("sm121 profiles", () => {
  it("lists every profile of the script recipe, with the deployment that uses it, and the nodes", async () => {
    const r = await run(["profiles"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe("qwen38-flash (recipes/qwen38-flash/profiles)");
    expect(lines[1]).toMatch(/^ {2}PROFILE +STATUS +RUNNABLE +DEPLOYMENTS +DESCRIPTION$/);
    const rows = tableRows(r.stdout, "PROFILE");
    expect(rows.map((x) => [x["PROFILE"], x["STATUS"], x["RUNNABLE"], x["DEPLOYMENTS"]])).toEqual([
      ["best", "stable", "yes", "-"],
      ["capture", "stable", "yes", "-"],
      ["datagen", "stable", "yes", "flash"],
      ["tp2", "experimental", "no", "-"],
    ]);
    // Descriptions wrap to fit 100 columns; none is cut.
    expect(rows[2]?.["DESCRIPTION"]).toBe("data generation: 8 sequences, 262144 context, stock MTP head");
    expect(r.stdout).toMatch(
      new RegExp(
        `^ {2}spark1 \\(protected\\) +\\S+@${s.nodes[0].ip.replace(/\./g, "\\.")}:${s.nodes[0].sshPort} +- +solo$`,
        "m",
      ),
    );
    expect(r.stdout).toMatch(/^ {2}spark2 +\S+ +qwen38-flash +flash$/m);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(100);
  });

  it("--json matches its schema, with every directive of the profile", async () => {
    const j = profilesSchema().parse(json(await run(["profiles", "qwen38-flash", "--json"])));
    const datagen = j.recipes[0]?.profiles.find((p) => p.name === "datagen");
    expect(datagen).toMatchObject({
      file: "recipes/qwen38-flash/profiles/datagen.env",
      status: "stable",
      runnable: true,
      nodeRecipe: "qwen38-flash",
      deployments: ["flash"],
      error: null,
    });
    expect(datagen?.description).toMatch(/data generation/);
    expect(j.nodes.map((n) => [n.node, n.protected, n.deployments])).toEqual([
      ["spark1", true, ["solo"]],
      ["spark2", false, ["flash"]],
      ["spark3", false, ["small"]],
    ]);
  });

  it("names the recipes with profiles when asked for another", async () => {
    const r = await run(["profiles", "qwen3-8b-solo"]);
    expect([r.code, r.stderr]).toEqual([
      2,
      'sm121 profiles: no script recipe "qwen3-8b-solo"; recipes with profiles: qwen38-flash\n',
    ]);
  });
});

describe("sm121 validate", () => {
  it("checks the site, every recipe and every profile, in the operator's language", async () => {
    const r = await run(["validate"]);
    expect([r.code, r.stdout, r.stderr]).toEqual([
      0,
      "ok: 7 recipes, 4 profiles, 3 nodes, 3 deployments (solo, flash, small)\n",
      "",
    ]);
    const de = await run(["validate", "--lang", "de"]);
    expect(de.stdout).toBe("in Ordnung: 7 Rezepte, 4 Profile, 3 Knoten, 3 Deployments (solo, flash, small)\n");
    const bad = await run(["validate", "--lang", "xx"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(
      /^sm121 validate: --lang xx: not a language of sm121; use one of en, ru, zh, ja, de, es\n/,
    );
  });

  it("fails on a broken profile that no deployment uses, naming file, line, column, key and fix", async () => {
    const file = join(s.e.dir, "recipes", "qwen38-flash", "profiles", "whoami.env");
    writeFileSync(file, "# sm121-recipe: qwen38-flash\n# sm121-description: not deployed anywhere\nFOO=$(whoami)\n");
    try {
      const r = await run(["validate"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        "recipes/qwen38-flash/profiles/whoami.env:3:5: FOO: the value contains `$`; " +
          "a profile value must not contain $, a backtick, a backslash or a double quote: " +
          "write the literal value, nothing expands it\n1 error\n",
      );
      const j = validateSchema().parse(json(await run(["validate", "--json"])));
      expect(j).toMatchObject({
        ok: false,
        recipes: 7,
        profiles: 5,
        nodes: 3,
        deployments: ["solo", "flash", "small"],
      });
      expect(j.errors).toEqual([
        expect.objectContaining({
          file: "recipes/qwen38-flash/profiles/whoami.env",
          line: 3,
          col: 5,
          field: "FOO",
          problem: "the value contains `$`",
        }),
      ]);
      // profiles lists it as invalid, with its error, and exits 1.
      const p = await run(["profiles"]);
      expect(p.code).toBe(1);
      expect(p.stdout).toMatch(/^ {2}whoami +invalid +- +- +-$/m);
      expect(p.stdout).toContain(
        "  whoami: error: recipes/qwen38-flash/profiles/whoami.env:3:5: FOO: the value contains `$`",
      );
    } finally {
      rmSync(file);
    }
  });
});

describe("sm121 render", () => {
  it("prints every step of up for every node, and --step picks one", async () => {
    const all = await run(["render", "flash"]);
    expect(all.code, all.stderr).toBe(0);
    const steps = [...all.stdout.matchAll(/^--- ([a-z-]+) \(bash -s on the node\)$/gm)].map((m) => m[1]);
    expect(steps).toEqual(["preflight", "stop", "memory-gate", "write", "start", "readiness", "verify"]);
    const one = await run(["render", "flash", "--step", "readiness"]);
    const api = `http://${s.nodes[1].ip}:8000`;
    expect(one.stdout.split("\n").slice(0, 2)).toEqual([
      `## spark2 (rank 0, API ${api})`,
      "--- readiness (bash -s on the node)",
    ]);
    expect(one.stdout).toContain('sm121_get "$kf" API_KEY');
    expect(one.stdout).toContain("| curl -H @- -s");
    expect(one.stdout).toContain(`--max-time 3 ${api}/v1/models`);
    expect(one.stdout).not.toContain("--- stop");
    const bad = await run(["render", "flash", "--step", "serve"]);
    expect([bad.code, bad.stderr]).toEqual([
      2,
      "sm121 render: --step serve: no such step; the steps of up: preflight, stop, memory-gate, write, start, " +
        "readiness, verify\n",
    ]);
    const none = await run(["render"]);
    expect([none.code, none.stderr]).toEqual([2, "sm121 render: name a deployment: solo, flash, small\n"]);
  });

  it(
    "its scripts are the ones up runs: the preflight finds what up wrote, " +
      "the readiness and verify pass on the serving node",
    async () => {
      const j = renderSchema().parse(json(await run(["render", "small", "--json"])));
      const node = j.nodes[0];
      expect(Object.keys(node?.steps ?? {})).toEqual([
        "preflight",
        "stop",
        "memory-gate",
        "write",
        "start",
        "readiness",
        "verify",
      ]);
      const pre = await sh(s.nodes[2], node?.steps.preflight ?? "");
      // On the node: sm121's record of small, the file up wrote with the sha256 render shows, the engine running.
      const file = node?.files[0];
      expect(file?.path).toBe("~/.sm121/deployments/small/run.sh");
      const records = (out: string) => out.split("\n").flatMap((l) => recordOfLine(l) ?? []);
      const look = records(pre);
      const state = firstRecord(look, "state")?.state;
      expect([state?.["identity"], state?.["launch"]]).toEqual([
        expect.stringMatching(/^[0-9a-f]{64}$/),
        expect.stringMatching(/^[0-9a-f]{64}$/),
      ]);
      expect(state?.["deployment"]).toBe("small");
      const watched = recordsOf(look, "watched").find((r) => r.file === file?.path);
      expect(watched?.sha256).toBe(file?.sha256);
      expect(firstRecord(look, "status")?.running).toBe(true);
      const ready = await sh(s.nodes[2], `${node?.steps.readiness ?? ""}\n${node?.steps.verify ?? ""}`);
      expect(modelsListed(records(ready))?.data?.map((m) => m.id)).toContain("qwen3-small");
    },
  );
});

describe("a verb that needs a deployment, given none", () => {
  it.each([["logs"], ["bench"]])("sm121 %s names the deployments", async (verb) => {
    const r = await run([verb]);
    expect([r.code, r.stderr]).toEqual([2, `sm121 ${verb}: name a deployment: solo, flash, small\n`]);
  });
});

describe("sm121 status --verbose", () => {
  it("prints the raw records of the node scripts on stderr", async () => {
    const r = await run(["status", "--no-http", "--verbose", "--node", "spark3"]);
    expect(r.stderr).toMatch(/^spark3 status \| @sm121 \{"kind":"state","state":\{"identity":"[0-9a-f]{64}"/m);
    expect(r.stderr).toMatch(/^spark3 status \| @sm121 \{"kind":"status","running":true,"startedAt":"/m);
    expect(r.stderr).toMatch(/^spark3 facts \| @sm121 \{"kind":"nodeMemory","memKiB":\d+/m);
    expect(r.stdout).toMatch(/^small \(qwen3-small-tmux: vllm, tmux\)$/m);
  });
});

describe("sm121 down", () => {
  const running = async (deployment: string) => {
    const r = statusSchema().parse(json(await run(["status", "--json", "--no-http"])));
    return r.deployments.find((d) => d.deployment === deployment)?.nodes[0]?.running;
  };
  const stateHas = async (deployment: string) =>
    (await s.e.pulumi.run(["stack", "export"])).stdout.includes(`sm121:index:Deployment::${deployment}"`);

  it("needs a deployment, and names them", async () => {
    const r = await run(["down"]);
    expect([r.code, r.stderr]).toEqual([2, "sm121 down: name a deployment: solo, flash, small\n"]);
  });

  it("refuses a protected node without SM121_ALLOW_PROTECTED, and stops nothing", async () => {
    const r = await run(["down", "solo"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "refused: node spark1 is protected and this run would stop deployment solo on it (sm121 down); " +
        "run with SM121_ALLOW_PROTECTED=spark1 to allow it\n",
    );
    expect((await sh(s.nodes[0], "docker ps --filter name=sm121-solo-0 --format '{{.Names}}'")).trim()).toBe(
      "sm121-solo-0",
    );
    expect(await stateHas("solo")).toBe(true);
  });

  it("stops one deployment through Pulumi and leaves the others serving", async () => {
    const r = await run(["down", "small"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^stopping small on spark3: SM121_DOWN=small pulumi up$/m);
    expect(r.stdout).toContain("small is stopped on spark3\n");
    expect(r.stdout).toContain(
      "the site (Pulumi.sim.yaml) still lists small: the next pulumi up serves it again; " +
        "remove it from sm121:deployments to keep it down\n",
    );
    expect((await sh(s.nodes[2], "tmux ls 2>/dev/null | grep -c sm121-small || true")).trim()).toBe("0");
    expect(await stateHas("small")).toBe(false);
    expect(await running("small")).toBe(false);
    expect(await running("flash")).toBe(true);
    expect(await running("solo")).toBe(true);
    const again = await run(["down", "small"]);
    expect([again.code, again.stdout]).toEqual([
      0,
      "deployment small is not in the state of stack sim (never deployed, or down already); nothing to stop\n",
    ]);
  });

  it("stops a protected node's deployment with the run's allowance", async () => {
    const r = await run(["down", "solo"], { SM121_ALLOW_PROTECTED: "spark1" });
    expect(r.code, r.stderr).toBe(0);
    expect((await sh(s.nodes[0], "docker ps -a --filter name=sm121-solo-0 --format '{{.Names}}'")).trim()).toBe("");
    expect(await running("flash")).toBe(true);
  });
});

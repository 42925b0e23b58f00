/**
 * A stack written by an earlier release is upgraded by one `pulumi up` of this one, which restarts
 * no engine. For each recorded release: that release, built from this repository's history
 * (test/helpers/release), serves a small site (a tmux, a docker and a DGPP deployment, a gateway
 * file on a node, hooks or a model cache as the release had them), so the nodes are exactly as it
 * left them; its own state is then replaced by the recorded fixture (test/fixtures/state/<release>.json,
 * recorded from this same site, which sits at a fixed path so that its bundles hash the same), and
 * the current build runs a refresh preview (read from the old state), one up and then a preview.
 *
 * `SM121_RECORD_STATE=1` writes the fixtures from the release's export instead of checking it
 * against them; review `git diff test/fixtures/state` before committing.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STATE_VERSIONS } from "../../src/providers/stateVersion";
import { e2eProject, type E2E } from "../helpers/project";
import { useCheckout, useRelease } from "../helpers/release";
import { fixturePath, fromFixture, readFixture, toFixture, type Exported } from "../helpers/stateFixture";
import { recordedSite, type SiteAt } from "../site/alloc";
import { sshOk } from "../site/exec";
import type { SimSite } from "../site/site";

const RECORD = process.env["SM121_RECORD_STATE"] === "1";

const recipe = (deploy: string, name: string, extra = "") => `engine = "vllm"
deploy = "${deploy}"
model = "sm121-test/tiny-qwen3"
served_model_name = "${name}"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = ${deploy === "tmux" ? 8100 : 8000}
args = ["--max-model-len", "4096"]
[readiness]
timeout_s = 60
max_model_len = 4096
${extra}`;

interface Release {
  commit: string;
  /** What the site asks of this release besides the two deployments. */
  config: string;
  /** More recipe text of the tmux deployment. */
  tmuxExtra: string;
  /** Where the release's fixture was recorded: its state names these addresses and ports. */
  at: SiteAt;
}

/** DGPP at the site's first rev (its commits have fixed dates: the same hash every run). */
const dgppRecipe = (site: SimSite) => `engine = "dgpp"
deploy = "native"
model = "${DGPP_MODEL}"
[dgpp]
repo = "${site.dgppRepo}"
rev = "${site.dgppRevs[0] ?? ""}"
dir = "~/dgpp"
http_port = 18080
[readiness]
timeout_s = 30
`;
const DGPP_MODEL = "sm121-test/tiny-qwen3";

const DEPLOYMENTS = [
  "  sm121:gateway: { path: ~/litellm/models.yaml, format: litellm, node: u1 }",
  "  sm121:deployments:",
  "    - { name: tm, recipe: tm, nodes: [u1] }",
  "    - { name: dk, recipe: dk, nodes: [u2] }",
  "    - { name: dg, recipe: dg, nodes: [u3] }",
].join("\n");

const RELEASES: Release[] = [
  // HostCommand resources carried the recipe's hooks then.
  {
    commit: "9492e6f",
    config: DEPLOYMENTS,
    tmuxExtra: '[hooks]\nbefore_serve = ["true"]\n',
    at: recordedSite(4, 2870),
  },
  {
    commit: "057f8f4",
    config: `  sm121:modelCache: keep\n${DEPLOYMENTS}`,
    tmuxExtra: "",
    at: recordedSite(7, 2873),
  },
];

type Resources = Exported["deployment"]["resources"];
const exportOf = async (e: E2E): Promise<Exported> =>
  JSON.parse((await e.pulumi.run(["stack", "export", "--show-secrets"])).stdout) as Exported;
const sm121Kind = (type: string): string | undefined => /^pulumi-nodejs:dynamic\/sm121:(\w+)$/.exec(type)?.[1];

/**
 * Each node's engine starts: how many times an engine began to serve outside a container (the fake
 * engine's own record), and each container with the time it started (a container's view of the
 * node is read-only).
 */
async function starts(e: E2E): Promise<Record<string, string>> {
  const each = await Promise.all(
    e.site.nodes.map(async (n) => {
      const f = join(n.root, "run", "engine-events.jsonl");
      const lines = existsSync(f) ? readFileSync(f, "utf8").split("\n") : [];
      const served = lines.filter((l) => l.includes('"event":"serving"')).length;
      const inspect = "docker ps -aq | xargs -r docker inspect -f '{{.Name}} {{.State.StartedAt}} {{.State.Running}}'";
      const containers = (await sshOk(e.site, n, inspect))
        .trim()
        .split("\n")
        .filter((l) => l !== "");
      return [n.name, [`${served} served`, ...containers].join("; ")] as const;
    }),
  );
  return Object.fromEntries(each);
}

/** What the fixture and a fresh export of the same release must share: the resources and their properties. */
const shape = (r: Resources) =>
  r
    .map(
      (x) =>
        `${x.type} ${x.urn.split("::").pop() ?? ""} ${Object.keys(x.outputs ?? {})
          .sort()
          .join(",")}`,
    )
    .sort();

describe.sequential.each(RELEASES)("a stack of release $commit", (rel) => {
  let e: E2E;

  beforeAll(async () => {
    e = await e2eProject({
      name: `upgrade-${rel.commit}`,
      base: `/tmp/sm121-e2e-upgrade-${rel.commit}`,
      nodes: ["u1", "u2", "u3"],
      ...rel.at,
      recipes: { "tm.toml": recipe("tmux", "tm", rel.tmuxExtra), "dk.toml": recipe("docker", "dk") },
      config: () => rel.config,
      memFloorGiB: null,
      dgppPollS: 6,
      prepare: (site) => {
        // DGPP's own prerequisite: the checkpoint in the head's HF cache.
        const hub = join(site.nodes[2]?.home ?? "", ".cache", "huggingface", "hub");
        mkdirSync(join(hub, `models--${DGPP_MODEL.replace("/", "--")}`, "snapshots"), { recursive: true });
        // A build that runs past the first poll and ends well before the second, as real ones do
        // against a poll of 30 s: these releases' poll asked the log, then the session, and a build
        // that ended between the two read as failed (fixed since: src/dgpp/provision.serve.ts
        // buildPollScript). The recorded fixtures carry this poll interval.
        writeFileSync(join(site.nodes[2]?.root ?? "", "etc", "dgpp-release-delay-s"), "2\n");
      },
    });
    // Only this site's recipes: a release refuses the repository's newer ones.
    for (const f of readdirSync(join(e.dir, "recipes"))) {
      if (!["tm.toml", "dk.toml"].includes(f)) rmSync(join(e.dir, "recipes", f), { recursive: true });
    }
    writeFileSync(join(e.dir, "recipes", "dg.toml"), dgppRecipe(e.site));
  }, 600_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("is served by that release, and its state is the recorded fixture's", async () => {
    useRelease(e.dir, rel.commit);
    const up = await e.up();
    useCheckout(e.dir);
    expect(up.code, up.all).toBe(0);
    const privateKey = readFileSync(e.site.clientKey, "utf8");
    const fixture = toFixture(await exportOf(e), { buildDir: e.dir, privateKey });
    if (RECORD) writeFileSync(fixturePath(rel.commit), `${JSON.stringify(fixture, null, 1)}\n`);
    expect(shape(fixture.deployment.resources)).toEqual(shape(readFixture(rel.commit).deployment.resources));
    const served = Object.values(await starts(e)).map((s) => s.replace(/ \S+Z /, " "));
    expect(served).toEqual(["1 served", "0 served; /sm121-dk-0 true", "1 served"]);
  }, 600_000);

  /** The stack's state replaced by the fixture: its provider text runs this checkout's code. */
  async function importFixture(): Promise<void> {
    const own = await exportOf(e);
    const privateKey = readFileSync(e.site.clientKey, "utf8");
    const fixture = fromFixture(readFixture(rel.commit), { checkout: e.dir, privateKey });
    const file = join(e.dir, "..", "fixture-state.json");
    const secrets = own.deployment.secrets_providers;
    const imported: Exported = { ...fixture, deployment: { ...fixture.deployment, secrets_providers: secrets } };
    writeFileSync(file, JSON.stringify(imported));
    const imp = await e.pulumi.run(["stack", "import", "--file", file]);
    expect(imp.code, imp.all).toBe(0);
  }

  it("is upgraded by one up of this release that restarts nothing, and a second changes nothing", async () => {
    await importFixture();
    const before = await starts(e);
    // What DGPP's scripts were asked (install, up, down): nothing more after the upgrade.
    const dgppCalls = () => readFileSync(join(e.site.dir, "dgpp-calls.log"), "utf8");
    const calls = dgppCalls();
    // Read (what refresh runs) works from the old state: every resource looked at on its node.
    const look = await e.pulumi.run(["refresh", "--preview-only"]);
    expect(look.code, look.all).toBe(0);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await starts(e)).toEqual(before);
    expect(up.all).not.toMatch(/replace/);
    // What goes: the package's default provider (taken over by sm121's own) and 9492e6f's hook
    // resources (hooks run with the engine now); what comes: the Site component the deployments
    // move under. Nothing of the nodes comes or goes.
    const comeOrGo = up.all.split("\n").filter((l) => /^ [+-] +\S+:\S+ .*\b(creat|delet)(ing|ed)\b/.test(l));
    const others = comeOrGo.filter((l) => !/pulumi:providers:pulumi-nodejs|HostCommand/.test(l));
    const what = [...new Set(others.map((l) => l.trim().split(/\s+/).slice(0, 3).join(" ")))];
    expect(what, up.all).toEqual([`+ sm121:index:Site ${e.stack}`]);
    const after = (await exportOf(e)).deployment.resources;
    const versions = after.flatMap((r) => {
      const kind = sm121Kind(r.type);
      return kind === undefined ? [] : [[kind, r.outputs?.["stateVersion"]]];
    });
    expect(versions.length).toBeGreaterThan(2);
    for (const [kind, v] of versions) expect(v, String(kind)).toBe(STATE_VERSIONS[kind as keyof typeof STATE_VERSIONS]);
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).not.toMatch(/to update|to create|to delete|to replace/);
    expect(await starts(e)).toEqual(before);
    expect(dgppCalls()).toBe(calls);
  }, 600_000);

  it("is destroyed from the old state: every engine stopped, every gateway endpoint disabled", async () => {
    await importFixture();
    const destroy = await e.destroy();
    expect(destroy.code, destroy.all).toBe(0);
    const running = "docker ps -q; tmux ls 2>/dev/null || true";
    const left = await Promise.all(e.site.nodes.map((n) => sshOk(e.site, n, running)));
    expect(left.map((l) => l.trim())).toEqual(["", "", ""]);
    const file = readFileSync(join(e.site.nodes[0]?.home ?? "", "litellm", "models.yaml"), "utf8");
    expect(file).not.toMatch(/^ {2}- model_name:/m);
  }, 600_000);
});

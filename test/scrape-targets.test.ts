/**
 * The scrape targets: the file_sd file rendered from every example recipe at once (one group per
 * deployment and node that serves Prometheus metrics, its labels, DGPP left out and why, a
 * loopback bind warned about), the site's `sm121:scrapeTargets` refusals, and ScrapeTargets'
 * provider: a pure diff over the written sha256 and the plan-time look, and its writes, backups,
 * reads and removal on a local path.
 */
import { STATE_VERSIONS } from "../src/providers/stateVersion";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { ScrapeTargetsWire } from "../src/providers/wire";
import { create, diff, read, remove, update } from "../src/providers/scrapeTargetsImpl";
import { loadRecipes } from "../src/engines/recipes";
import { parseSite, readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { sha256 } from "../src/render/identity";
import { scrapeFile } from "../src/render/scrapeTargets";
import { errorsOf, ONE_NODE } from "./helpers/spec";
import { say } from "../src/text/messages";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });

describe("the scrape file of the example site", () => {
  const f = scrapeFile(bundles, undefined);

  it("has one group per deployment and node that answers the API, labelled, at the engine's /metrics", () => {
    const rows = f.groups.map((g) => [
      g.targets.join(),
      g.labels["deployment"],
      g.labels["node"],
      g.labels["rank"],
      g.labels["sm121_engine"],
      g.labels["__metrics_path__"],
    ]);
    expect(rows).toEqual([
      ["203.0.113.1:8100", "glm53-full-tp4-gr8", "gr8-1", "0", "gr8", "/metrics"],
      ["203.0.113.21:8000", "qwen3-32b-vllm-tp2", "vllm-1", "0", "vllm", "/metrics"],
      ["198.51.100.1:30000", "qwen3-30b-sglang-tmux", "sglang-1", "0", "sglang", "/metrics"],
      ["198.51.100.11:8000", "qwen38-flash-best", "flash-best", "0", "vllm", "/metrics"],
      ["127.0.0.1:8000", "qwen38-flash-datagen", "flash-datagen", "0", "vllm", "/metrics"],
      ["198.51.100.13:8001", "qwen38-flash-capture", "flash-capture", "0", "vllm", "/metrics"],
      ["198.51.100.21:8000", "qwen3-8b-solo", "solo-1", "0", "vllm", "/metrics"],
    ]);
    expect(f.groups.find((g) => g.labels["deployment"] === "qwen3-32b-vllm-tp2")?.labels).toEqual({
      __metrics_path__: "/metrics",
      deployment: "qwen3-32b-vllm-tp2",
      node: "vllm-1",
      rank: "0",
      sm121_engine: "vllm",
      model: "qwen3-32b",
      recipe: "qwen3-32b-vllm-tp2",
    });
    expect(JSON.parse(f.text)).toEqual(f.groups);
  });

  it("adds no label that an engine sets on its own series (Prometheus would rename the engine's to exported_*)", () => {
    const dir = join(ROOT, "src", "engines", "metrics");
    type Defs = { metrics: Array<{ labels: string[] }> };
    const own = new Set(
      readdirSync(dir).flatMap((f) =>
        (JSON.parse(readFileSync(join(dir, f), "utf8")) as Defs).metrics.flatMap((m) => m.labels),
      ),
    );
    expect(own).toContain("engine");
    const ours = [...new Set(f.groups.flatMap((g) => Object.keys(g.labels)))].filter((l) => !l.startsWith("__"));
    expect(ours.filter((l) => own.has(l))).toEqual([]);
  });

  it("leaves DGPP out and says why in the plan (its /metrics answer JSON)", () => {
    expect(f.groups.some((g) => g.labels["sm121_engine"] === "dgpp")).toBe(false);
    expect(f.plan).toContain("qwen38-27b-nvfp4-dgpp: none (dgpp exports no Prometheus metrics)");
    expect(f.plan).toContain("qwen3-32b-vllm-tp2: 203.0.113.21:8000/metrics (vllm-1, rank 0, vllm, model qwen3-32b)");
  });

  it("warns of an engine bound to its node's loopback, unless the file is written on that node", () => {
    expect(f.warnings.map((w) => say(w, "en"))).toEqual([
      "qwen38-flash-datagen on flash-datagen listens on 127.0.0.1: a Prometheus that is not on flash-datagen " +
        "cannot scrape 127.0.0.1:8000; bind the node's address (BIND) or run Prometheus on flash-datagen",
    ]);
    expect(scrapeFile(bundles, "flash-datagen").warnings).toEqual([]);
  });

  it("has no targets of a deployment this run leaves out (sm121 down, or removed from the site)", () => {
    const without = scrapeFile(
      bundles.filter((b) => b.deployment !== "qwen3-32b-vllm-tp2"),
      undefined,
    );
    expect(without.groups.map((g) => g.labels["deployment"])).not.toContain("qwen3-32b-vllm-tp2");
    expect(without.groups).toHaveLength(f.groups.length - 1);
  });
});

describe("sm121:scrapeTargets in the site", () => {
  const parse = (text: string) => parseSite("Pulumi.s.yaml", "s", text);

  it("takes a path, and a node of the site", () => {
    expect(
      parse(`${ONE_NODE}  sm121:scrapeTargets: { path: ~/prometheus/sm121.json, node: spark1 }\n`).scrapeTargets,
    ).toEqual({ path: "~/prometheus/sm121.json", node: "spark1" });
  });

  it("refuses a file file_sd would not read as JSON, and a node the site does not have", () => {
    expect(errorsOf(() => parse(`${ONE_NODE}  sm121:scrapeTargets: { path: ~/prometheus/sm121.yml }\n`))).toEqual([
      "Pulumi.s.yaml:6:26: sm121:scrapeTargets.path: path does not end in .json: Prometheus' file_sd reads a " +
        "file by its extension, and sm121 writes JSON; write e.g. ~/prometheus/sm121.json",
    ]);
    expect(
      errorsOf(() => parse(`${ONE_NODE}  sm121:scrapeTargets: { path: /etc/prometheus/sm121.json, node: spark9 }\n`)),
    ).toEqual([
      'Pulumi.s.yaml:6:60: sm121:scrapeTargets.node: node "spark9" is not in sm121:nodes; name a node of the site, ' +
        "or remove node to write the file on the machine that runs Pulumi",
    ]);
  });
});

describe("ScrapeTargets' provider", () => {
  const dir = mkdtempSync(join(tmpdir(), "sm121-scrape-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, "prom", "sm121.json");
  const content = scrapeFile(bundles, undefined).text;
  const wire = (text: string, found: ScrapeTargetsWire["__file"]["found"]): ScrapeTargetsWire => ({
    path,
    targets: "",
    connection: { knownHosts: "~/.ssh/known_hosts", hostKeys: "strict" },
    __file: { content: text, warnings: [], found },
    stateVersion: STATE_VERSIONS.ScrapeTargets,
  });
  const written = { ...wire(content, { sha256: null }), sha256: sha256(content) };

  it("diffs purely: the content against what was written, and what the plan-time look found there", async () => {
    expect(await diff("id", written, wire(content, { sha256: sha256(content) }))).toEqual({ changes: false });
    expect(await diff("id", written, wire(content, { unknown: "connect ETIMEDOUT" }))).toEqual({ changes: false });
    expect(await diff("id", written, wire(content, { sha256: null }))).toEqual({ changes: true });
    expect(await diff("id", written, wire(content, { sha256: sha256("[]\n") }))).toEqual({ changes: true });
    expect(await diff("id", written, wire("[]\n", { sha256: sha256(content) }))).toEqual({ changes: true });
    expect(await diff("id", written, { ...wire(content, { sha256: null }), path: `${path}.moved.json` })).toEqual({
      changes: true,
      replaces: ["path"],
      deleteBeforeReplace: true,
    });
  });

  it("writes the file, keeps one it did not write as a backup, reads it back and removes it", async () => {
    const made = await create(wire(content, { sha256: null }));
    expect(readFileSync(path, "utf8")).toBe(content);
    expect(made.outs).toMatchObject({ sha256: sha256(content) });
    // Rewritten over what it wrote itself: no backup.
    await update("id", made.outs as ScrapeTargetsWire, wire("[]\n", { sha256: sha256(content) }));
    expect(readdirSync(join(dir, "prom"))).toEqual(["sm121.json"]);
    // Edited by hand since: the edit is kept.
    writeFileSync(path, '[{"targets": ["by-hand:9100"]}]\n');
    const again = await update("id", { ...written, sha256: sha256("[]\n") }, wire(content, { sha256: null }));
    expect(again.outs).toMatchObject({ sha256: sha256(content) });
    const backups = readdirSync(join(dir, "prom")).filter((n) => n.startsWith("sm121.json.sm121-bak-"));
    expect(backups.map((n) => readFileSync(join(dir, "prom", n), "utf8"))).toEqual([
      '[{"targets": ["by-hand:9100"]}]\n',
    ]);
    expect((await read("id", written)).props).toMatchObject({ sha256: sha256(content) });
    writeFileSync(path, "[]\n");
    expect((await read("id", written)).props).toMatchObject({ sha256: sha256("[]\n") });
    await remove("id", written);
    expect(existsSync(path)).toBe(false);
    expect((await read("id", written)).props).toMatchObject({ sha256: sha256("") });
  });
});

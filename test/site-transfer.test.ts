// The simulated site's model transfers (the fake `hf download`) as strict as the real tool, and
// sm121's reading of a real HF cache layout (serve/hfcache): completeness, and what a peer lacks
// of a source's copy. (Images move with the real docker: test/site-docker.test.ts.)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { completeness, copyPlan, manifestScript, parseManifest, type Manifest } from "../src/serve/hfcache";
import { localScript } from "./site/exec";
import { endSite } from "./helpers/project";
import { startSite, type SimNode, type SimSite } from "./site/site";

const AT = allocate(__filename);

const DIR = "/tmp/sm121-site-transfer";
const REPO = "sm121-test/tiny-qwen3";
let site: SimSite;
let t1: SimNode;

async function sh(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return localScript(site, t1, script);
}

async function manifest(hfHome: string): Promise<Manifest> {
  const r = await sh(`set -euo pipefail\n${manifestScript(`${hfHome}/hub/models--sm121-test--tiny-qwen3`)}`);
  expect(r.code, r.stderr).toBe(0);
  return parseManifest(r.stdout);
}

beforeAll(async () => {
  site = await startSite({ dir: DIR, nodes: ["t1"], ...AT.site() });
  t1 = site.nodes[0] as SimNode;
});
// The site's processes, then its files (some 200 MB: images, the registry, caches).
afterAll(() => endSite(site, DIR));

describe("the fake hf download and sm121's reading of the cache", () => {
  const home = () => join(t1.home, "hf-a");

  it("refuses an unknown repo, a gated one without its token, and an unknown revision", async () => {
    const missing = await sh(`HF_HOME=${home()} hf download sm121-test/nope`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      "Repository Not Found for url: https://huggingface.co/api/models/sm121-test/nope/revision/main.",
    );
    writeFileSync(join(site.dir, "hf-hub", "sm121-test", "tiny-qwen3.gated"), "hf_gate");
    const gated = await sh(`HF_HOME=${home()} huggingface-cli download ${REPO}`);
    expect(gated.code).toBe(1);
    expect(gated.stderr).toContain(`Access to model ${REPO} is restricted`);
    const rev = await sh(`HF_HOME=${home()} HF_TOKEN=hf_gate hf download ${REPO} --revision v9`);
    expect(rev.code).toBe(1);
    expect(rev.stderr).toContain("Revision Not Found");
    const flag = await sh(`hf download ${REPO} --no-such-flag`);
    expect(flag.code).toBe(2);
  });

  it("fills the HF cache layout; a complete revision reads complete, a damaged one names what it lacks", async () => {
    const dl = await sh(`HF_HOME=${home()} HF_TOKEN=hf_gate hf download ${REPO}`);
    expect(dl.code, dl.stderr).toBe(0);
    const m = await manifest(home());
    const commit = m.refs.get("main") ?? "";
    expect(dl.stdout.trim()).toBe(`${home()}/hub/models--sm121-test--tiny-qwen3/snapshots/${commit}`);
    const c = completeness(m, "main");
    const fixture = JSON.parse(
      readFileSync(join(__dirname, "site", "hf-hub", REPO, "model.safetensors.index.json"), "utf8"),
    ) as { metadata: { total_size: number } };
    expect(c).toMatchObject({ commit, missing: [], files: 6 });
    // The shards' bytes are the index's tensors plus each file's safetensors header.
    expect(c.bytes).toBeGreaterThan(fixture.metadata.total_size);
    expect(completeness(m, commit).missing).toEqual([]);
    expect(completeness(m, "v2").missing).toEqual(["no refs/v2: the revision was never downloaded here"]);

    const shard = m.links.get(`snapshots/${commit}/model-00002-of-00002.safetensors`) ?? "";
    const blob = `blobs/${shard.split("/").pop() ?? ""}`;
    const base = `${home()}/hub/models--sm121-test--tiny-qwen3`;
    await sh(
      `mv ${base}/${blob} ${base}/${blob}.incomplete && rm ` +
        `${base}/snapshots/${commit}/model-00001-of-00002.safetensors`,
    );
    expect(completeness(await manifest(home()), "main").missing).toEqual([
      `snapshots/${commit}/model-00002-of-00002.safetensors: its blob ${blob} is missing (a download ` +
        "or copy was cut short)",
      `snapshots/${commit}/model-00001-of-00002.safetensors: named by model.safetensors.index.json, ` +
        "not in the snapshot",
    ]);
    // A second download fetches only what is missing, as huggingface_hub does.
    await sh(`rm ${base}/${blob}.incomplete; HF_HOME=${home()} HF_TOKEN=hf_gate hf download ${REPO}`);
    const log = readFileSync(join(site.dir, "hf-downloads.log"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { bytes?: number; error?: string });
    expect(log.at(-1)?.bytes).toBe(m.files.get(blob));
    expect(completeness(await manifest(home()), "main").missing).toEqual([]);
  });

  it("plans what a peer lacks: directories, a partial blob's rest, missing blobs, links, the refs last", async () => {
    const src = await manifest(home());
    const commit = src.refs.get("main") ?? "";
    const total = completeness(src, "main").bytes;
    const empty = copyPlan(src, commit, parseManifest(""));
    expect(empty.bytes).toBe(total);
    expect(empty.present).toBe(0);
    expect(empty.items.map((i) => i.kind).join("")).toMatch(/^d+f{6}l{6}f$/);
    expect(empty.items.at(-1)).toMatchObject({ kind: "f", path: "refs/main", offset: 0, length: 40 });
    expect(copyPlan(src, commit, src).items).toEqual([]);

    // A peer with one blob half there (as <blob>.incomplete), one of another size, the rest whole.
    const blobs = [...src.files].filter(([p]) => p.startsWith("blobs/")).sort((a, b) => b[1] - a[1]);
    const [[big = "", bigSize = 0] = [], [other = "", otherSize = 0] = []] = blobs;
    const peer = parseManifest("");
    for (const d of src.dirs) peer.dirs.add(d);
    for (const [p, s] of src.files) if (p.startsWith("blobs/") && p !== big && p !== other) peer.files.set(p, s);
    peer.files.set(`${big}.incomplete`, 1000);
    peer.files.set(other, otherSize + 7);
    const plan = copyPlan(src, commit, peer);
    const files = plan.items.filter((i) => i.kind === "f");
    expect(files).toHaveLength(3);
    expect(files).toEqual(
      expect.arrayContaining([
        { kind: "f", path: big, offset: 1000, length: bigSize - 1000 },
        { kind: "f", path: other, offset: 0, length: otherSize },
      ]),
    );
    expect(files.at(-1)).toEqual({ kind: "f", path: "refs/main", offset: 0, length: 40 });
    expect(plan.present).toBe(total - bigSize - otherSize + 1000);
    expect(plan.bytes).toBe(bigSize - 1000 + otherSize);
  });
});

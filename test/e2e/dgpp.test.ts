/**
 * DGPP end to end (seed 000): staged config on every node, the build and install on rank 0 only
 * (install reaches the peer itself), the rev marker as the skip key, a rev bump, a lost marker, a
 * failing release.sh that leaves no marker, and destroy running `dgpp-cluster down` on rank 0.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode, SimSite } from "../site/site";

const AT = allocate(__filename);

const MODEL = "Qwen/Qwen3.8-27B-NVFP4";
const recipe = (site: SimSite, rev: string) => `engine = "dgpp"
deploy = "native"
model = "${MODEL}"
[dgpp]
repo = "${site.dgppRepo}"
rev = "${rev}"
dir = "~/dgpp"
http_port = 18080
[dgpp.engine]
kv_cache_dtype = "fp8"
[readiness]
timeout_s = 30
`;

// The tests run in order on one site, each from the state the one before left.
describe.sequential("DGPP through pulumi up", () => {
  let e: E2E;
  let head: SimNode;
  let peer: SimNode;
  const calls = () =>
    readFileSync(join(e.site.dir, "dgpp-calls.log"), "utf8")
      .trim()
      .split("\n")
      .filter((l) => l !== "");
  const installs = () => calls().filter((l) => / install /.test(l));
  const marker = () => readFileSync(join(head.home, "dgpp", ".sm121-dgpp-rev"), "utf8").trim();
  const setRev = (rev: string) => writeFileSync(join(e.dir, "recipes", "qwen-dgpp.toml"), recipe(e.site, rev));

  beforeAll(async () => {
    e = await e2eProject({
      name: "dgpp",
      nodes: ["d1", "d2"],
      ...AT.site(),
      config: () => "  sm121:preflight: true\n  sm121:deployments:\n    - { recipe: qwen-dgpp, nodes: [d1, d2] }",
      prepare: (site) => {
        // DGPP's own prerequisite, not sm121's: the checkpoint in the head's HF cache.
        const h = site.nodes[0] as SimNode;
        mkdirSync(join(h.home, ".cache", "huggingface", "hub", `models--${MODEL.replace("/", "--")}`, "snapshots"), {
          recursive: true,
        });
      },
    });
    [head, peer] = e.site.nodes as [SimNode, SimNode];
    setRev(e.site.dgppRevs[0] ?? "");
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("warns in the preview (sm121:preflight) about DGPP's own prerequisites, changing nothing", async () => {
    const ckpt = join(head.home, ".cache", "huggingface", "hub", `models--${MODEL.replace("/", "--")}`);
    renameSync(ckpt, `${ckpt}.away`);
    writeFileSync(join(head.root, "etc", "dgpp-multi-fabric"), "");
    try {
      const preview = await e.preview();
      expect(preview.code, preview.all).toBe(0);
      expect(preview.all).toContain(
        "python3 scripts/download_model.py --config ~/dgpp/sm121-qwen-dgpp.json` on rank 0",
      );
      expect(preview.all).toMatch(/d1: more than two RoCE devices: .*set \[dgpp\] roce_devices/);
      expect(existsSync(join(head.home, "dgpp"))).toBe(false);
    } finally {
      renameSync(`${ckpt}.away`, ckpt);
      rmSync(join(head.root, "etc", "dgpp-multi-fabric"));
    }
  });

  it("builds on rank 0, installs on both, stages the config everywhere and serves on 18080", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(marker()).toBe(e.site.dgppRevs[0]);
    const short = (e.site.dgppRevs[0] ?? "").slice(0, 7);
    expect(installs().map((l) => l.split(" ").slice(1, 3).join(" "))).toEqual(["d1 install", "d2 install"]);
    expect(installs()[1]).toContain("--local");
    for (const n of [head, peer]) {
      expect(readFileSync(join(n.home, "dgpp", ".env"), "utf8")).toContain(`DGPP_NODES="${head.ip} ${peer.ip}"`);
      expect(JSON.parse(readFileSync(join(n.home, "dgpp", "sm121-qwen-dgpp.json"), "utf8"))).toMatchObject({
        model: MODEL,
        world_size: 2,
        http: { port: 18080 },
        engine: { kv_cache_dtype: "fp8" },
      });
      expect(existsSync(join(n.home, "dgpp", "releases", short))).toBe(true);
    }
    const models = JSON.parse((await sshScript(e.site, head, `curl -s http://${head.ip}:18080/v1/models`)).stdout) as {
      data: Array<{ id: string }>;
    };
    expect(models.data[0]?.id).toBe(MODEL);
    expect(calls().some((l) => / d1 up --config /.test(l) && l.includes(`--release ${short}`))).toBe(true);
  });

  it("skips the build on a second up (the marker) and restarts nothing", async () => {
    const before = calls().length;
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    // The stack, the provider host, the Site, the Deployment, its DGPP provisioning and its engine.
    expect(up.all).toMatch(/\b6 unchanged\b/);
    expect(calls().length).toBe(before);
  });

  it("builds again on a rev bump, and survives a lost marker with the release installed", async () => {
    setRev(e.site.dgppRevs[1] ?? "");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(marker()).toBe(e.site.dgppRevs[1]);
    expect(installs()).toHaveLength(4);
    rmSync(join(head.home, "dgpp", ".sm121-dgpp-rev"));
    const refresh = await e.refresh();
    expect(refresh.code, refresh.all).toBe(0);
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).toContain("was already installed; keeping it");
    expect(marker()).toBe(e.site.dgppRevs[1]);
  });

  it("fails on a failing release.sh with the log path, writes no marker, and the next up retries", async () => {
    writeFileSync(join(head.root, "etc", "dgpp-release-fail"), "");
    setRev(e.site.dgppRevs[0] ?? "");
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(
      "no marker was written, so the next `pulumi up` retries. Log: ~/.sm121/deployments/qwen-dgpp/dgpp-build.log",
    );
    expect(marker()).toBe(e.site.dgppRevs[1]);
    rmSync(join(head.root, "etc", "dgpp-release-fail"));
    const retry = await e.up();
    expect(retry.code, retry.all).toBe(0);
    expect(marker()).toBe(e.site.dgppRevs[0]);
  });

  it("destroys with `dgpp-cluster down` on rank 0 and leaves no manager", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    expect(d.all).toContain("the installed DGPP release");
    expect(
      calls()
        .filter((l) => / down /.test(l))
        .pop(),
    ).toMatch(/^\S+ d1 down --config/);
    const left = (
      await sshScript(
        e.site,
        head,
        "curl -s -o /dev/null -w '%{http_code}' http://$SIM_NODE_IP:18080/v1/models || true",
      )
    ).stdout;
    expect(left).toBe("000");
  });
});

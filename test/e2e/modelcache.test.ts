/**
 * The model and the image on every node, through the real Pulumi CLI on the simulated site: a
 * two-node deployment whose (gated) model is on neither node gets it downloaded once, on rank 0,
 * and copied node to node to the peer, and its image (on rank 0 only) copied too, then serves; a
 * second up downloads and copies nothing; a half-copied cache is completed, not restarted; an
 * image on no node is pulled once; destroy leaves the cache and the image.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { buildImage, sshOk } from "../site/exec";
import type { SimNode, SimSite } from "../site/site";
import { modelsIn } from "../helpers/json";

const AT = allocate(__filename);

const REPO = "sm121-test/tiny-qwen3";
const IMAGE = "registry.example/sm121/vllm-tiny:1";
/** An image of the site's vLLM with a build of its own (an ID no other node has). */
const dockerfile = (build: string) => `FROM vllm/vllm-openai:latest\nLABEL sm121.test.build=${build}`;
const TOKEN = "hf_modelcacheE2E0123456789";
const recipe = (image: string) => `engine = "vllm"
deploy = "docker"
model = "${REPO}"
served_model_name = "tiny"
image = "${image}"
tp = 2
port = 8000
args = ["--max-model-len", "4096"]
[readiness]
timeout_s = 60
max_model_len = 4096
`;

const sh = (e: E2E, node: SimNode, script: string): Promise<string> => sshOk(e.site, node, script);

/** Every file of the repo dir with its size and inode, links with their targets. */
const listing = (e: E2E, n: SimNode) =>
  sh(
    e,
    n,
    `cd ~/.cache/huggingface/hub/models--${REPO.replace("/", "--")} && find . -mindepth 1 \\( -type ` +
      `f -printf 'f %s %P\\n' \\) -o \\( -type l -printf 'l %l %P\\n' \\) | sort`,
  );
const inodes = (e: E2E, n: SimNode) =>
  sh(e, n, `cd ~/.cache/huggingface/hub/models--${REPO.replace("/", "--")}/blobs && stat -c '%i %Y %n' * | sort -k3`);
const imageId = (e: E2E, n: SimNode) => sh(e, n, `docker image inspect --format '{{.Id}}' ${IMAGE}`);

describe.sequential("ModelCache and ImageSync through pulumi up", () => {
  let e: E2E;
  let m1: SimNode;
  let m2: SimNode;
  let imageOnM1 = "";
  const downloads = () => {
    const f = join(e.site.dir, "hf-downloads.log");
    return existsSync(f)
      ? readFileSync(f, "utf8")
          .trim()
          .split("\n")
          .filter((l) => l !== "")
          .map((l) => JSON.parse(l) as Record<string, unknown>)
      : [];
  };

  beforeAll(async () => {
    e = await e2eProject({
      name: "modelcache",
      nodes: ["m1", "m2"],
      ...AT.site(),
      config: () =>
        "  sm121:modelCache: keep\n  sm121:imageSync: true\n  sm121:deployments:\n" +
        "    - { name: tiny, recipe: tiny, nodes: [m1, m2] }",
      recipes: { "tiny.toml": recipe(IMAGE) },
      prepare: (site: SimSite) => {
        // The model gated behind the token.
        writeFileSync(join(site.dir, "hf-hub", "sm121-test", "tiny-qwen3.gated"), TOKEN);
      },
    });
    [m1, m2] = e.site.nodes as [SimNode, SimNode];
    // The image on rank 0 only, built there (an ID of its own).
    imageOnM1 = await buildImage(e.site, m1, IMAGE, dockerfile("1"));
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:hfToken"], { input: TOKEN })).code).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("downloads the model once on rank 0, copies it and the image to the peer, then serves", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    const d = downloads();
    expect(d).toHaveLength(1);
    expect(d[0]).toMatchObject({ node: "m1", repo: REPO, revision: "main", token: "set", files: 6 });
    expect(JSON.stringify(d[0]?.["argv"])).not.toContain(TOKEN);
    expect(up.all).toContain(`downloading ${REPO}@main on m1 (once; the other nodes get it from there)`);
    expect(up.all).toMatch(/copying [\d.]+ KiB from m1 over the cluster network as a chain: m1 -> m2/);
    // Counted on m1: the bytes that left it are the payload (plus the stream's record lines).
    expect(up.all).toMatch(/tiny model: copied 213\.0 KiB in [\d.]+ s \([^)]*\) to m2; 21[34]\.\d KiB left m1/);
    expect(up.all).toContain(`m2 lacks ${IMAGE}: copying it from m1`);
    expect(await listing(e, m2)).toBe(await listing(e, m1));
    expect(await listing(e, m2)).toMatch(
      /^l \.\.\/\.\.\/blobs\/[0-9a-f]{64} snapshots\/[0-9a-f]{40}\/model-00001-of-00002\.safetensors$/m,
    );
    expect(await imageId(e, m2)).toBe(`${imageOnM1}\n`);
    expect(modelsIn(await sh(e, m1, `curl -s http://${m1.ip}:8000/v1/models`))[0]?.id).toBe("tiny");
    // The operation's key is gone from the peer; the token is nowhere in the output or the state.
    expect(await sh(e, m2, "cat ~/.ssh/authorized_keys 2>/dev/null || true")).not.toContain("sm121-fanout-");
    expect(up.all).not.toContain(TOKEN);
    expect((await e.pulumi.run(["stack", "export"])).stdout).not.toContain(TOKEN);
  });

  it("a second up downloads and copies nothing", async () => {
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(downloads()).toHaveLength(1);
    expect(again.all).not.toMatch(/copying|pulling|downloading/);
    expect(again.all).not.toMatch(/updated|created/);
  });

  it("a half-copied cache is completed from where it stopped, not copied again", async () => {
    const dir = `~/.cache/huggingface/hub/models--${REPO.replace("/", "--")}`;
    const whole = await listing(e, m1);
    // As a copy cut short leaves it: the refs and links not yet written, one blob half there as
    // <blob>.incomplete, another not started, the rest complete.
    const blobs = (await sh(e, m2, `cd ${dir}/blobs && ls -S`)).trim().split("\n");
    const [big = "", second = ""] = blobs;
    await sh(
      e,
      m2,
      `cd ${dir} && rm -rf refs snapshots && size=$(stat -c %s blobs/${big}) && head -c $((size / ` +
        `2)) blobs/${big} > blobs/${big}.incomplete && rm blobs/${big} blobs/${second}`,
    );
    // A line a killed copy left behind is dropped once its hour has passed; other lines stay.
    const stale =
      'restrict,command="bash /x/recv.sh",expiry-time="202001010000" ssh-ed25519 ' +
      "AAAAC3NzaC1lZDI1NTE5AAAAIOld sm121-fanout-old";
    const live =
      'restrict,command="bash /x/recv.sh",expiry-time="209901010000" ssh-ed25519 ' +
      "AAAAC3NzaC1lZDI1NTE5AAAAINew sm121-fanout-running";
    await sh(
      e,
      m2,
      `printf '%s\\n' 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOps ops@laptop' '${stale}' '${live}' >> ` +
        `~/.ssh/authorized_keys`,
    );
    const kept = (await inodes(e, m2)).split("\n").filter((l) => l !== "" && !l.includes(big) && !l.includes(second));
    const refresh = await e.refresh();
    expect(refresh.code, refresh.all).toBe(0);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(downloads()).toHaveLength(1);
    expect(up.all).toMatch(/m2 lacked files at the last refresh: snapshots\/[0-9a-f]{40}\/ is empty or absent/);
    expect(up.all).toMatch(
      new RegExp(
        String.raw`copying [\d.]+ KiB \(continuing: [\d.]+ KiB already there\) from m1 ` +
          "over the cluster network as a chain: m1 -> m2",
      ),
    );
    expect(await listing(e, m2)).toBe(whole);
    expect((await sh(e, m2, "cat ~/.ssh/authorized_keys")).trim().split("\n")).toEqual([
      "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOps ops@laptop",
      live,
    ]);
    // The blobs that were complete were not written again.
    expect(
      (await inodes(e, m2)).split("\n").filter((l) => l !== "" && !l.includes(big) && !l.includes(second)),
    ).toEqual(kept);
  });

  it("an image on no node is pulled once on rank 0 and copied to the peer", async () => {
    const next = "registry.example/sm121/vllm-tiny:2";
    // In the site's registry (registry.example leads there), on no node.
    const id = await buildImage(e.site, m2, next, dockerfile("2"));
    await sh(e, m2, `docker push -q ${next} && docker image rm -f ${next} >/dev/null`);
    writeFileSync(join(e.dir, "recipes", "tiny.toml"), recipe(next));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain(`pulling ${next} on m1 (once; the other nodes get it from there)`);
    for (const n of [m1, m2]) expect(await sh(e, n, `docker image inspect --format '{{.Id}}' ${next}`)).toBe(`${id}\n`);
  });

  it("says the copy in the operator's language (SM121_LANG=es reaches the provider process)", async () => {
    const next = "registry.example/sm121/vllm-tiny:3";
    // On rank 0 only: the up copies it to the peer.
    const id = await buildImage(e.site, m1, next, dockerfile("3"));
    writeFileSync(join(e.dir, "recipes", "tiny.toml"), recipe(next));
    const up = await e.up({ SM121_LANG: "es" });
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain(`a m2 le falta ${next}: se copia desde m1 (`);
    expect(up.all).toMatch(/vllm-tiny:3 copiada a m2 en cadena: [\d.]+ [KMG]iB en [\d.]+ s \([\d.]+ [KMG]?i?B\/s\)/);
    expect(await sh(e, m2, `docker image inspect --format '{{.Id}}' ${next}`)).toBe(`${id}\n`);
  });

  it("destroy stops the engine and leaves the model and the image, saying so in the operator's language", async () => {
    const d = await e.destroy({ SM121_LANG: "ru" });
    expect(d.code, d.all).toBe(0);
    expect(d.all).toContain(`контрольная точка ${REPO} остаётся в HF-кэше на m1, m2`);
    expect(d.all).toContain("vllm-tiny:3 остаётся на m1, m2; удалите его там командой docker image rm");
    expect(await listing(e, m2)).toBe(await listing(e, m1));
  });
});

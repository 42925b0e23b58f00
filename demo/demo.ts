/**
 * `npm run demo`: sm121 on the built-in simulated site, for anyone trying it without a Spark.
 * Three simulated nodes; a stack with the qwen38-flash script recipe (profile best) on spark1 and
 * a two-node tensor-parallel vLLM in docker on spark2 and spark3; `pulumi up`, the endpoints and
 * one chat completion from each, `pulumi destroy`, and the site stopped again. The models are on
 * no node at first (the site's hub serves the tiny test checkpoint under their names) and spark3
 * lacks the vLLM image: the up downloads each model once and copies it node to node, and copies
 * the image from spark2. Every node runs a real Docker Engine; the engines run in real containers
 * of the site's images (the fake engine inside), and `docker ps` on spark2 shows rank 0's.
 */
import { cpSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { e2eProject, type E2E } from "../test/helpers/project";
import { makeScriptRecipe } from "../test/site/recipe";
import { sshOk } from "../test/site/exec";
import { SITE_IMAGES, type SiteImageName } from "../test/site/images";
import { setEngineProofs, type SimNode } from "../test/site/site";

const VLLM = "nvcr.io/nvidia/vllm:26.01-py3";

/** A step's title, in bold on a terminal (not where NO_COLOR is set). */
const bold = process.stdout.isTTY && process.env["NO_COLOR"] === undefined;
const say = (s: string) => process.stdout.write(bold ? `\n\x1b[1m== ${s}\x1b[0m\n` : `\n== ${s}\n`);

function extra(n: SimNode): string {
  if (n.name !== "spark1") return "";
  return [
    `      vars: { tritonCache: ${n.home}/.cache/triton-qwen38, mtpShardR2: ${n.home}/models/qwen38-mtp-r2 }`,
    "      recipes:",
    "        qwen38-flash: { dir: ~/spark-recipes/qwen38-flash, container: qwen38-flash, " +
      "ownedMounts: [/recipe/files] }",
  ].join("\n");
}

async function chat(url: string, model: string): Promise<string> {
  const started = Date.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model,
      max_tokens: 24,
      messages: [{ role: "user", content: "Say hello from a DGX Spark." }],
    }),
  });
  const body = (await res.json()) as { choices?: Array<{ message?: { content?: string } }> };
  return `${Date.now() - started} ms: ${body.choices?.[0]?.message?.content ?? JSON.stringify(body)}`;
}

async function main(): Promise<void> {
  say("starting three simulated Sparks (sshd and a Docker Engine each on 127.0.0.61-63, a registry, the images)");
  let e: E2E | undefined;
  try {
    e = await e2eProject({
      name: "demo",
      nodes: ["spark1", "spark2", "spark3"],
      firstIp: 61,
      sshPort: 2271,
      nodeExtra: extra,
      // seed 001's spark2 setting: start.sh checks readiness on localhost, so the server binds it.
      nodeEnv: (n): Record<string, string> => (n.name === "spark1" ? { BIND: "127.0.0.1", PORT: "8000" } : {}),
      prepare: (site) => {
        const spark1 = site.nodes[0] as SimNode;
        makeScriptRecipe(spark1, "spark-recipes/qwen38-flash");
        mkdirSync(join(spark1.home, "models", "qwen38-mtp-r2"), { recursive: true });
        setEngineProofs(spark1, ["MTP draft head: FP8 rowwise copy engaged"]);
        for (const repo of ["Qwen/Qwen3-32B", "Qwen/Qwen3.8-Flash-Next"])
          cpSync(join(site.dir, "hf-hub", "sm121-test", "tiny-qwen3"), join(site.dir, "hf-hub", repo), {
            recursive: true,
          });
      },
      // spark3 never pulled the vLLM image: the up copies it from spark2 (docker save | ssh docker load).
      images: (node) => (Object.keys(SITE_IMAGES) as SiteImageName[]).filter((i) => node !== "spark3" || i !== VLLM),
      config: () =>
        [
          "  sm121:modelCache: keep",
          "  sm121:imageSync: true",
          "  sm121:deployments:",
          "    - { name: flash, recipe: qwen38-flash, profile: best, nodes: [spark1] }",
          "    - { recipe: qwen3-32b-vllm-tp2, nodes: [spark2, spark3] }",
        ].join("\n"),
    });
    say(`pulumi preview (project ${e.dir}, stack ${e.stack})`);
    const preview = await e.pulumi.run(["preview"], { stream: true });
    if (preview.code !== 0) throw new Error("pulumi preview failed");
    say("pulumi up: each model downloaded once and copied node to node, the image copied to spark3, then served");
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], { stream: true });
    if (up.code !== 0) throw new Error("pulumi up failed");
    say("docker ps on spark2 (the engine of rank 0 in its container)");
    process.stdout.write(await sshOk(e.site, e.site.nodes[1] as SimNode, "docker ps"));
    say("a second pulumi up: nothing changed, nothing is touched");
    const again = await e.pulumi.run(["up", "--yes", "--skip-preview"]);
    process.stdout.write(`${/Resources:\n([\s\S]*?)\n\n/.exec(again.stdout)?.[1] ?? again.stdout}  (${again.ms} ms)\n`);
    // One stack output per deployment.
    const out = JSON.parse((await e.pulumi.run(["stack", "output", "--json"])).stdout) as Record<
      string,
      { endpoints: string[]; servedModel: string }
    >;
    if (Object.keys(out).length === 0) throw new Error("the stack has no deployment's output");
    for (const [name, d] of Object.entries(out)) {
      for (const url of d.endpoints) {
        say(`${name}: ${d.servedModel} at ${url}`);
        process.stdout.write(`${await chat(url, d.servedModel)}\n`);
      }
    }
    say("pulumi destroy");
    const destroy = await e.pulumi.run(["destroy", "--yes", "--skip-preview"], { stream: true });
    if (destroy.code !== 0) throw new Error("pulumi destroy failed");
  } finally {
    say("stopping the simulated site");
    await e?.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});

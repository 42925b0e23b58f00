/**
 * Convergence through the real Pulumi CLI: every plain `pulumi up` reaches the declared state
 * whatever happened on the nodes since the last one. A container removed by hand is named in the
 * preview and served again; a node moved between deployments is stopped and re-served in one up;
 * protected nodes refuse destroy, a removal from the site and a move, before anything is stopped.
 * The blocks build on each other in order (one site, one stack).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";
import { modelsIn } from "../helpers/json";

const AT = allocate(__filename);

const recipe = (served: string, port: number) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "${served}"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = ${port}
args = ["--max-model-len", "8192"]
[readiness]
timeout_s = 60
`;

describe.sequential("every up converges", () => {
  let e: E2E;
  let n1: SimNode;
  let n2: SimNode;
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout;
  const deploy = (lines: string[]) => `  sm121:deployments:\n${lines.map((l) => `    - ${l}`).join("\n")}`;

  beforeAll(async () => {
    e = await e2eProject({
      name: "converge",
      nodes: ["n1", "n2"],
      ...AT.site(),
      recipes: { "alpha.toml": recipe("alpha", 8000), "beta.toml": recipe("beta", 8001) },
      nodeExtra: (n) => (n.name === "n2" ? "      protected: true" : ""),
      config: () => deploy(["{ name: a, recipe: alpha, nodes: [n1] }"]),
    });
    [n1, n2] = e.site.nodes as [SimNode, SimNode];
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves a, then repairs a container removed by hand with a plain up", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    await sh(n1, "docker rm -f sm121-a-0 >/dev/null");
    // refresh finds it, and with the program run the stack outputs say so too.
    const refresh = await e.pulumi.run(["refresh", "--yes", "--skip-preview", "--run-program"]);
    expect(refresh.code, refresh.all).toBe(0);
    const out = JSON.parse((await e.pulumi.run(["stack", "output", "--json"])).stdout) as Record<
      string,
      { status: string; endpoints: string[] }
    >;
    expect(out["a"]).toMatchObject({ status: "drifted", endpoints: [] });
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("n1: the engine is not running (container gone)");
    expect(preview.all).toMatch(/~ 1 to update/);
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(modelsIn(await sh(n1, `curl -s http://${n1.ip}:8000/v1/models`))[0]?.id).toBe("alpha");
    const quiet = await e.up();
    expect(quiet.all).not.toMatch(/updated|created/);
  });

  it("moves n1 from deployment a to deployment b in one up, and says so in the preview", async () => {
    e.reconfigure(deploy(["{ name: b, recipe: beta, nodes: [n1] }"]));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("n1: stops deployment a first (the node now serves b)");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await sh(n1, "docker ps --format '{{.Names}}'")).toBe("sm121-b-0\n");
    expect(modelsIn(await sh(n1, `curl -s http://${n1.ip}:8001/v1/models`))[0]?.id).toBe("beta");
    // a's own delete ran after b took the node: it left b alone.
    expect(up.all).toContain("nothing of a runs here: deployment b took this node");
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).not.toMatch(/updated|created|deleted/);
  });

  it(
    "refuses to stop a protected node: removal from the site, a move, destroy; " +
      "all allowed with SM121_ALLOW_PROTECTED",
    async () => {
      const both = deploy(["{ name: b, recipe: beta, nodes: [n1] }", "{ name: c, recipe: alpha, nodes: [n2] }"]);
      e.reconfigure(both);
      const refused = await e.up();
      expect(refused.code).not.toBe(0);
      expect(refused.all).toContain(
        "node n2 is protected and this run would restart c on it; run with SM121_ALLOW_PROTECTED=n2",
      );
      const allowed = await e.up({ SM121_ALLOW_PROTECTED: "n2" });
      expect(allowed.code, allowed.all).toBe(0);
      const cStarted = await sh(n2, "docker inspect -f '{{.State.StartedAt}}' sm121-c-0");

      // Removing c from the site would stop it on n2: refused at plan time, nothing stopped.
      e.reconfigure(deploy(["{ name: b, recipe: beta, nodes: [n1] }"]));
      const removal = await e.preview();
      expect(removal.code).not.toBe(0);
      expect(removal.all).toContain(
        "node n2 is protected and this run would stop deployment c on it (the site no longer puts it there)",
      );
      // Moving b onto n2 would stop c there and restart b on a protected node: refused too.
      e.reconfigure(deploy(["{ name: b, recipe: beta, nodes: [n2] }"]));
      const move = await e.preview();
      expect(move.code).not.toBe(0);
      expect(move.all).toContain("node n2 is protected and this run would");
      e.reconfigure(both);

      // destroy: c (protected) is met first and refuses; b on n1 is not stopped either.
      const destroy = await e.destroy();
      expect(destroy.code).not.toBe(0);
      expect(destroy.all).toContain(
        "node n2 is protected and this run would stop c on it; run with SM121_ALLOW_PROTECTED=n2",
      );
      expect(await sh(n2, "docker inspect -f '{{.State.StartedAt}}' sm121-c-0")).toBe(cStarted);
      expect(await sh(n1, "docker ps --format '{{.Names}}'")).toBe("sm121-b-0\n");
      const ok = await e.destroy({ SM121_ALLOW_PROTECTED: "n2" });
      expect(ok.code, ok.all).toBe(0);
      for (const n of [n1, n2]) expect(await sh(n, "docker ps -aq | wc -l")).toBe("0\n");
      // Seven Pulumi runs: on a loaded 2-core machine they take more than the default 120 s.
    },
    360_000,
  );
});

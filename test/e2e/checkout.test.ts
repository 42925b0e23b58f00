/**
 * The state names no path of the machine that wrote it. Checkout A (its own build) serves; a
 * stack written by the previous release (whose provider text named A's absolute path, and whose
 * component was sm121:index:Recipe) is rewritten by one `pulumi up` that restarts nothing; then A
 * is removed and checkout B, at another path, runs preview, refresh and destroy on the same stack.
 * The blocks run in order.
 */
import { cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, REPO, type E2E } from "../helpers/project";
import { pulumiEnv } from "../helpers/pulumi";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const SOLO =
  'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "solo"\n' +
  'image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n';
const legacy = (release: string) =>
  readFileSync(join(REPO, "test", "fixtures", "legacy", `provider-${release}.txt`), "utf8");
/**
 * The provider texts earlier releases wrote, with where each names its implementation: 9492e6f
 * by the checkout's absolute path, 97d9858 (the closure serializer's text) by the path inside
 * the project.
 */
const RELEASES: Array<[string, (dir: string, impl: string) => string]> = [
  [
    "9492e6f",
    (dir, impl) => legacy("9492e6f").replace("@IMPL_PATH@", join(dir, "dist", "src", "providers", `${impl}.js`)),
  ],
  ["97d9858", (_dir, impl) => legacy("97d9858").replace("@IMPL_REL@", `dist/src/providers/${impl}.js`)],
];

interface StateResource {
  urn: string;
  type: string;
  parent?: string;
  provider?: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

/** The provider text stored with every dynamic resource of the stack. */
async function providerTexts(e: E2E): Promise<string[]> {
  const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
    deployment: { resources: StateResource[] };
  };
  return state.deployment.resources.flatMap((r) =>
    typeof r.outputs?.["__provider"] === "string" ? [r.outputs["__provider"]] : [],
  );
}

describe.sequential("any checkout, any path", () => {
  let e: E2E;
  let c1: SimNode;
  const started = async () =>
    (await sshScript(e.site, c1, "docker inspect -f '{{.State.StartedAt}}' sm121-solo-0")).stdout;

  beforeAll(async () => {
    e = await e2eProject({
      name: "checkout",
      nodes: ["c1"],
      ...AT.site(),
      recipes: { "solo.toml": SOLO },
      config: () => "  sm121:deployments:\n    - { name: solo, recipe: solo, nodes: [c1] }",
    });
    c1 = e.site.nodes[0] as SimNode;
    // Checkout A has its own build, as a real clone has (not the repository's dist/).
    rmSync(join(e.dir, "dist"));
    cpSync(join(REPO, "dist"), join(e.dir, "dist"), { recursive: true });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves from checkout A", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    const texts = await providerTexts(e);
    expect(texts.length).toBeGreaterThan(0);
    for (const t of texts) {
      expect(t).toContain('"dist/src/providers/engineImpl.js"');
      expect(t).not.toMatch(/"\/(tmp|work|home|root)\//);
    }
  });

  it.each(RELEASES)(
    "rewrites a state written by release %s with one up that restarts nothing",
    async (_release, textOf) => {
      const exported = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
        deployment: { resources: StateResource[] };
      };
      const impl: Record<string, string> = {
        EngineDeployment: "engineImpl",
        GatewayFragment: "gatewayImpl",
        DgppProvision: "dgppImpl",
      };
      const current = await providerTexts(e);
      for (const r of exported.deployment.resources) {
        const kind = r.type.split(":").pop() ?? "";
        if (impl[kind] === undefined) continue;
        const text = textOf(e.dir, impl[kind]);
        for (const props of [r.inputs, r.outputs]) if (props !== undefined) props["__provider"] = text;
      }
      // Earlier releases used the package's default provider, not the one the program registers.
      for (const r of exported.deployment.resources) {
        if (r.type === "pulumi:providers:pulumi-nodejs") r.urn = r.urn.replace(/::sm121$/, "::default");
        if (r.provider !== undefined)
          r.provider = r.provider.replace(
            "pulumi:providers:pulumi-nodejs::sm121::",
            "pulumi:providers:pulumi-nodejs::default::",
          );
      }
      // Earlier releases had no Site component: the deployments were the stack's own children.
      const site = exported.deployment.resources.find((r) => r.type === "sm121:index:Site");
      const stackUrn = exported.deployment.resources.find((r) => r.type === "pulumi:pulumi:Stack")?.urn;
      expect(site?.parent).toBe(stackUrn);
      exported.deployment.resources = exported.deployment.resources.filter((r) => r !== site);
      // Earlier releases named the component sm121:index:Recipe (its children's URNs too).
      const file = join(e.dir, "..", "legacy-state.json");
      const text = JSON.stringify(exported).replaceAll(`"${site?.urn ?? ""}"`, `"${stackUrn ?? ""}"`);
      writeFileSync(
        file,
        text.replaceAll("sm121:index:Site$", "").replaceAll("sm121:index:Deployment", "sm121:index:Recipe"),
      );
      const imported = await e.pulumi.run(["stack", "import", "--file", file]);
      expect(imported.code, imported.all).toBe(0);
      const before = await started();
      const up = await e.up();
      expect(up.code, up.all).toBe(0);
      expect(up.all).toContain("provider code in the state is rewritten");
      expect(await started()).toBe(before);
      expect(await providerTexts(e)).toEqual(current);
      expect(up.all).not.toMatch(/replace/);
      // Only the provider changes hands (earlier releases used the default one), and the Site
      // component comes; nothing else comes or goes.
      const comeOrGo = up.all.split("\n").filter((l) => /^ [+-] +\S+:\S+ .*\b(creat|delet)(ing|ed)\b/.test(l));
      const others = comeOrGo.filter((l) => !l.includes("pulumi:providers:pulumi-nodejs"));
      const what = [...new Set(others.map((l) => l.trim().split(/\s+/).slice(0, 3).join(" ")))];
      expect(what, up.all).toEqual([`+ sm121:index:Site ${e.stack}`]);
      const after = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
        deployment: { resources: StateResource[] };
      };
      // The aliases carried the component and its children over to the type's new name.
      const types = after.deployment.resources.map((r) => r.type);
      expect(types).toContain("sm121:index:Deployment");
      const parents = new Map(after.deployment.resources.map((r) => [r.urn, r.parent]));
      const siteUrn = after.deployment.resources.find((r) => r.type === "sm121:index:Site")?.urn;
      const deployment = after.deployment.resources.find((r) => r.type === "sm121:index:Deployment");
      expect(deployment?.parent).toBe(siteUrn);
      expect(deployment?.urn).toContain("::sm121:index:Site$sm121:index:Deployment::solo");
      expect(parents.size).toBe(after.deployment.resources.length);
      expect(JSON.stringify(after)).not.toContain("sm121:index:Recipe");
      expect(
        after.deployment.resources
          .filter((r) => r.type === "pulumi:providers:pulumi-nodejs")
          .map((r) => r.urn.split("::").pop()),
      ).toEqual(["sm121"]);
    },
  );

  it("runs preview, refresh and destroy from checkout B at another path after A is removed", async () => {
    const b = join(dirname(e.dir), "elsewhere", "checkout-b");
    mkdirSync(b, { recursive: true });
    for (const f of ["Pulumi.yaml", "package.json", `Pulumi.${e.stack}.yaml`]) cpSync(join(e.dir, f), join(b, f));
    cpSync(join(e.dir, "recipes"), join(b, "recipes"), { recursive: true });
    cpSync(join(REPO, "dist"), join(b, "dist"), { recursive: true });
    symlinkSync(join(REPO, "node_modules"), join(b, "node_modules"));
    const before = await started();
    rmSync(e.dir, { recursive: true, force: true });
    const pulumi = pulumiEnv(b, join(dirname(b), "..", "pulumi"));
    expect((await pulumi.run(["stack", "select", e.stack])).code).toBe(0);
    const preview = await pulumi.run(["preview", "--diff"]);
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).not.toMatch(/to update|to create|to delete/);
    const refresh = await pulumi.run(["refresh", "--yes", "--skip-preview"]);
    expect(refresh.code, refresh.all).toBe(0);
    expect(await started()).toBe(before);
    const destroy = await pulumi.run(["destroy", "--yes", "--skip-preview"]);
    expect(destroy.code, destroy.all).toBe(0);
    expect((await sshScript(e.site, c1, "docker ps -aq | wc -l")).stdout).toBe("0\n");
  });
});

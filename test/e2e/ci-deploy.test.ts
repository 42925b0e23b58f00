/** scripts/ci-deploy.sh against the simulated site: preview, up, then a no-change up that exits 0. */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { REPO, e2eProject, type E2E } from "../helpers/project";

const AT = allocate(__filename);

describe("scripts/ci-deploy.sh", () => {
  let e: E2E;
  let key: string;
  const run = (mode: string, extra: Record<string, string> = {}) =>
    spawnSync("bash", [join(REPO, "scripts", "ci-deploy.sh"), mode, "--stack", e.stack, "--cwd", e.dir], {
      encoding: "utf8",
      env: { ...process.env, ...e.pulumi.env, SM121_SSH_PRIVATE_KEY: key, ...extra },
    });
  beforeAll(async () => {
    e = await e2eProject({
      name: "cideploy",
      nodes: ["c1"],
      ...AT.site(),
      recipes: {
        "tiny.toml":
          'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-0.6B"\n' +
          'image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n',
      },
      config: () => "  sm121:deployments:\n    - { recipe: tiny, nodes: [c1] }",
    });
    key = readFileSync(e.site.clientKey, "utf8");
  });
  afterAll(async () => {
    await e?.destroy();
    await e?.stop();
  });

  it("previews on a change request, ups on main, and says nothing to do on a no-change up", () => {
    const preview = run("auto", { GITHUB_EVENT_NAME: "pull_request" });
    expect(preview.status, preview.stdout + preview.stderr).toBe(0);
    expect(preview.stdout).toMatch(/ci-deploy: pulumi preview: .*to create/);
    const up = run("auto", { GITHUB_EVENT_NAME: "push", GITHUB_REF: "refs/heads/main" });
    expect(up.status, up.stdout + up.stderr).toBe(0);
    expect(up.stdout).toMatch(/ci-deploy: pulumi up: .*created/);
    const again = run("up");
    expect(again.status, again.stdout + again.stderr).toBe(0);
    expect(again.stdout).toMatch(/ci-deploy: pulumi up: nothing to do \(\d+ unchanged\)/);
    for (const out of [preview, up, again])
      expect(out.stdout + out.stderr).not.toContain(key.split("\n")[1] ?? "never");
  });

  it("exits non-zero with a summary on a failure, and refuses to run without the passphrase", () => {
    const bad = run("up", { PULUMI_CONFIG_PASSPHRASE: "wrong" });
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toMatch(/ci-deploy: pulumi up FAILED \(exit \d+\)/);
    const none = run("preview", { PULUMI_CONFIG_PASSPHRASE: "" });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("set PULUMI_CONFIG_PASSPHRASE");
  });
});

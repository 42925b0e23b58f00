/**
 * What sm121 prints while `pulumi up` works, in Russian, through the real Pulumi CLI: the node's
 * readiness lines (said by the provider, printed by the node's script), and the error of a node
 * whose sshd is gone, with its cause and its fix, while ssh2's and Pulumi's own words stay theirs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { killNodeSshd, restartNodeSshd } from "../site/faults";
import type { SimNode } from "../site/site";
import { smallVllm } from "../helpers/spec";

const AT = allocate(__filename);

const RECIPE = smallVllm(30);

const RU = { SM121_LANG: "ru", LANG: "ru_RU.UTF-8" };

describe.sequential("pulumi up under SM121_LANG=ru", () => {
  let e: E2E;
  let spare: SimNode;

  beforeAll(async () => {
    e = await e2eProject({
      name: "lang-live",
      nodes: ["spark1", "spark2"],
      ...AT.site(),
      config: () => "",
      recipes: { "small.toml": RECIPE },
    });
    spare = e.site.nodes[1] as SimNode;
    e.writeStack(
      [
        "config:",
        `  sm121:knownHosts: ${e.site.knownHosts}`,
        "  sm121:minMemAvailableGiB: 1",
        "  sm121:readyGraceS: 0",
        nodesYaml(e.site),
        "  sm121:deployments:",
        "    - { name: small, recipe: small, nodes: [spark1] }",
        "",
      ].join("\n"),
    );
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("prints the node's readiness lines in Russian", async () => {
    const up = await e.up(RU);
    expect(up.code, up.all).toBe(0);
    // The wait itself ("30 s") is render/plan's waitWords, the plan's own English words.
    const waiting = String.raw`spark1: ожидание до 30 \S+, `;
    expect(up.all).toMatch(new RegExp(waiting + String.raw`пока http://\S+/v1/models не ответит 200`));
    expect(up.all).toMatch(/spark1: готов за [\d.]+ с; первый токен за \d+ мс/);
    expect(up.all).not.toContain("waiting up to");
    // Pulumi's own summary stays Pulumi's.
    expect(up.all).toMatch(/Resources:\n/);
  });

  it("says in Russian which node it cannot reach, why, and what to check; ssh2's words stay as they were", async () => {
    killNodeSshd(e.site, spare);
    try {
      const up = await e.up(RU);
      expect(up.code, up.all).toBe(0);
      const at = `${e.site.user}@${spare.ip}:${spare.sshPort}`;
      const refused = `spark2 недоступен: в соединении с ${at} отказано`;
      expect(up.all).toContain(`${refused} (connect ECONNREFUSED`);
      expect(up.all).toContain("проверьте, что sshd запущен на spark2 и слушает ssh.port");
      expect(up.all).toContain("(ни одно развёртывание его не использует)");
      expect(up.all).not.toContain("connection to");
    } finally {
      await restartNodeSshd(e.site, spare);
    }
  });
});

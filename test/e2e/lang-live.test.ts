/**
 * What sm121 prints while `pulumi up` works, in Russian, through the real Pulumi CLI: the node's
 * readiness lines (said by the provider, printed by the node's script), the error of a node
 * whose sshd is gone, with its cause and its fix, while ssh2's and Pulumi's own words stay theirs,
 * and what the plan-time look finds on a node whose engine was killed: in Russian under
 * SM121_LANG=ru, the English plan line as it always read, and the same input in both languages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { killNodeSshd, restartNodeSshd } from "../site/faults";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";
import { smallVllm } from "../helpers/spec";

const AT = allocate(__filename);

const RECIPE = smallVllm(30);

const RU = { SM121_LANG: "ru", LANG: "ru_RU.UTF-8" };

describe.sequential("pulumi up under SM121_LANG=ru", () => {
  let e: E2E;
  let spare: SimNode;
  let spark1: SimNode;

  beforeAll(async () => {
    e = await e2eProject({
      name: "lang-live",
      nodes: ["spark1", "spark2"],
      ...AT.site(),
      config: () => "",
      recipes: { "small.toml": RECIPE },
    });
    [spark1, spare] = e.site.nodes as [SimNode, SimNode];
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

  it("says where an engine was killed in Russian; in English the plan line reads as before", async () => {
    await sshScript(e.site, spark1, "docker rm -f sm121-small-0 >/dev/null");
    const ru = await e.preview(RU);
    expect(ru.code, ru.all).toBe(0);
    const planLine = (run: { stderr: string }) => run.stderr.split("\n").find((l) => l.startsWith("sm121: small: "));
    // The reason, the node's name and why the engine does not run (its status script's word) in the line.
    expect(planLine(ru)).toBe("sm121: small: перезапускает spark1: spark1: движок не запущен (контейнера нет)");
    // What sm121 says is Russian; the drift input of the diff is the state's English (below).
    expect(ru.stderr).not.toContain("the engine is not running");
    const en = await e.preview({ SM121_LANG: "en", LANG: "C.UTF-8" });
    expect(en.code, en.all).toBe(0);
    expect(planLine(en)).toBe("sm121: small: restarts spark1: spark1: the engine is not running (container gone)");
    expect(en.all).not.toContain("движок");
    // The input holds the finding in English words, the same bytes whoever previews (the state too).
    const drift = (run: { stdout: string }) => {
      const from = run.stdout.indexOf("~ drift");
      return run.stdout.slice(from, run.stdout.indexOf("plan ", from));
    };
    expect(drift(ru)).toContain('"spark1: the engine is not running (container gone)"');
    expect(drift(ru)).not.toContain("serve.look");
    expect(drift(ru)).toBe(drift(en));
  });
});

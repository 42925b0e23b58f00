/**
 * What sm121 stores or compares is language-neutral data (a message key and its arguments), said
 * in the reader's language only where it is printed: the plan's restart reasons and notes, a held
 * deployment, a failure in the state (this build's, and an older one's English words), the gateway
 * file's notes, an overlay's replacements and the memory fit's sources. What goes onto a node (the
 * gateway file, the .env) and what the plan compares (the bundle, the plan's lines) stay the same
 * bytes in every language.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DRIVERS } from "../src/engines";
import { loadRecipes } from "../src/engines/recipes";
import { heldWords } from "../src/providers/engineDecide";
import { diff } from "../src/providers/engineImpl";
import { diff as gatewayDiff } from "../src/providers/gatewayImpl";
import { pack } from "../src/providers/packed";
import { STATE_VERSIONS, upgrade } from "../src/providers/stateVersion";
import type { EngineWire, GatewayWire } from "../src/providers/wire";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { disableEndpoints, gatewayFile, type GatewayModel } from "../src/gateway/file.render";
import { sha256 } from "../src/render/identity";
import { scrapeFile } from "../src/render/scrapeTargets";
import { deploymentPlan } from "../src/render/plan";
import type { DeploymentBundle } from "../src/render/types";
import { EXIT, failureAdvice } from "../src/serve/failure";
import { toStored, type StoredOutcome } from "../src/serve/outcome";
import { CommandError } from "../src/remote";
import { LOCALES, msg, say, useLocale, type Locale } from "../src/text/messages";
import { CONNECTION, engineWire } from "./helpers/wire";
import { saidUnder } from "./helpers/said";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const render = () => renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const b = render().find((x) => x.deployment === "qwen3-32b-vllm-tp2") as DeploymentBundle;
const wire = (bundle: DeploymentBundle, over: Partial<EngineWire> = {}): EngineWire =>
  engineWire(bundle, { stateVersion: STATE_VERSIONS.EngineDeployment, ...over });

afterEach(() => useLocale("en"));

const relaunched = {
  ...b,
  identity: "another",
  nodes: b.nodes.map((n) => ({ ...n, argv: [...n.argv, "--seed", "1"] })),
};
const failed: StoredOutcome = {
  status: "failed",
  nodes: [],
  warnings: [],
  failure: msg("state.stepFailed", { step: msg("state.step.readiness"), detail: "vllm-1: no answer in 60 s" }),
};

describe("the plan's restart reasons, said where the plan is printed", () => {
  const stored = { ...wire(b), outcome: failed, secrets: { "sm121:hfToken": "a" } };
  const news = wire(relaunched, { secrets: { "sm121:hfToken": "b" } });

  it("in Russian and Japanese, the look's drift as it found it", async () => {
    const changes = msg("serve.look.keyChanged", { key: "A", from: "1", to: "2" });
    const drift = [msg("serve.look.envEdited", { node: "vllm-1", changes })];
    const ru = await saidUnder("ru", () => diff("id", stored, { ...news, __run: { ...news.__run, drift } }));
    expect(ru).toEqual([
      "sm121: qwen3-32b-vllm-tp2: перезапускает vllm-1, vllm-2: " +
        "собранный пакет изменился (запуск на vllm-1, vllm-2); vllm-1: .env изменён на узле: A 1 -> 2; " +
        "секрет заменён: sm121:hfToken; прошлый up оставил его в состоянии «сбой»",
    ]);
    const ja = await saidUnder("ja", () => diff("id", stored, news));
    expect(ja).toEqual([
      "sm121: qwen3-32b-vllm-tp2: vllm-1, vllm-2 を再起動します: " +
        "レンダリングされたバンドルが変わりました（vllm-1, vllm-2 での起動）; " +
        "シークレットが更新されました: sm121:hfToken; 前回の up で「失敗」のままになっています",
    ]);
  });

  it("a change that restarts nothing: the recorded settings in Russian and Japanese", async () => {
    const gate = b.nodes[0]?.memGateGiB ?? 0;
    const guarded = { ...b, nodes: b.nodes.map((n, i) => (i === 0 ? { ...n, protected: true, memGateGiB: 7 } : n)) };
    const serving = { ...wire(b), outcome: { ...failed, status: "serving" as const, failure: undefined } };
    const ru = await saidUnder("ru", () => diff("id", serving, wire(guarded)));
    expect(ru).toEqual([
      "sm121: qwen3-32b-vllm-tp2: ничего не перезапускает: " +
        "vllm-1: защита false -> true (записано; ничего не перезапускается); " +
        `vllm-1: порог памяти ${gate} -> 7 ГиБ (записано; ничего не перезапускается)`,
    ]);
    const ja = await saidUnder("ja", () => diff("id", serving, wire(guarded)));
    expect(ja[0]).toContain("vllm-1: 保護 false -> true（記録のみ。これによる再起動はありません）");
  });

  it("a held deployment in Russian and Japanese, its causes as the look found them", () => {
    const dead = msg("serve.look.notRunning", { node: "vllm-1", detail: "container gone" });
    const hung = msg("serve.look.modelsSilent", { node: "vllm-1" });
    const held = { count: 2, windowS: 3600, maxRestarts: 2, causes: [dead], now: [hung] };
    const h = heldWords("pair", { ...held, already: false });
    expect(say(h, "ru")).toContain(
      "развёртывание pair: перезапусков из-за его здоровья за последние 3600 с — 2 " +
        "(sm121:liveness maxRestarts 2); последние причины: vllm-1: движок не запущен (container gone); " +
        "сейчас vllm-1: движок запущен, но /v1/models не отвечает. ",
    );
    expect(say(h, "ja")).toContain("直近 3600 秒間にヘルスのため 2 回再起動しました");
    expect(say(h, "ja")).toContain("`SM121_RESTART=1 pulumi up`");
  });
});

describe("a failure in the state", () => {
  it("is the failed step as a key and the node's own account as found, said in each language", () => {
    const o = toStored(
      { status: "failed", nodes: [], warnings: [], failure: "readiness failed: vllm-1: no answer in 60 s" },
      "readiness",
    );
    expect(o.failure).toEqual(failed.failure);
    const f = o.failure ?? msg("state.recorded", { text: "" });
    expect(say(f, "en")).toBe("readiness failed: vllm-1: no answer in 60 s");
    expect(say(f, "ru")).toBe("шаг «готовность» не удался: vllm-1: no answer in 60 s");
    expect(say(f, "ja")).toBe("「準備完了の確認」に失敗しました: vllm-1: no answer in 60 s");
    // What the state holds has no words of any language in it.
    expect(JSON.stringify(o)).not.toMatch(/готовность|準備|readiness failed/);
  });

  it("from a stop or a refresh (no serve step): kept as found", () => {
    const o = toStored({ status: "failed", nodes: [], warnings: [], failure: "stop failed on spark3: exit code 1" });
    expect(say(o.failure ?? msg("state.recorded", { text: "" }), "ru")).toBe("stop failed on spark3: exit code 1");
  });

  it("an older sm121's English words: kept whole, and said as recorded in Russian and Japanese", () => {
    const old = { ...wire(b), stateVersion: 2, outcome: { status: "failed", nodes: [], warnings: [], failure: "x" } };
    const f = upgrade("EngineDeployment", old).state.outcome?.failure ?? msg("state.recorded", { text: "" });
    expect([say(f, "en"), say(f, "ru"), say(f, "ja")]).toEqual([
      "x",
      "x (записано прежней версией sm121)",
      "x（以前の sm121 が記録した内容）",
    ]);
  });
});

describe("the way forward printed with a failure", () => {
  const failedWith = (code: number) =>
    new CommandError({ node: "vllm-1", step: "start", exit: { code, signal: null }, stdout: "", stderr: "" });

  it("is said in the operator's language for each of sm121's exit codes, and nothing for another", () => {
    const said = (code: number, locale: Locale) => {
      useLocale(locale);
      return failureAdvice(failedWith(code), b);
    };
    expect(said(EXIT.memoryGate, "en")).toMatch(/^Nothing was started on vllm-1: free memory there/);
    expect(said(EXIT.memoryGate, "ru")).toMatch(/^На vllm-1 ничего не запущено: освободите там память/);
    expect(said(EXIT.readinessTimeout, "ja")).toContain(`${b.readiness.timeoutS} 秒以内に応答しませんでした`);
    expect(said(EXIT.readinessTimeout, "ja")).toContain(b.recipeFile);
    for (const code of Object.values(EXIT)) {
      for (const l of ["ru", "ja"] as const) expect(said(code, l), `${code} ${l}`).not.toBe(said(code, "en"));
    }
    expect(said(1, "ru")).toBe("");
  });
});

describe("the gateway file: its notes in the reader's language, its bytes in none", () => {
  const model = (deployment: string, status: string): GatewayModel => ({
    deployment,
    model: deployment,
    status,
    endpoints: [{ node: "n1", url: "http://203.0.113.9:8000", reachable: true }],
  });
  const gw = (found?: string): GatewayWire => ({
    path: "~/gw.yaml",
    format: "litellm",
    endpoints: "",
    connection: CONNECTION,
    __file: {
      models: [model("a", "serving")],
      apiKey: false,
      lingering: [],
      served: [],
      ...(found !== undefined && { found }),
    },
    stateVersion: STATE_VERSIONS.GatewayFragment,
  });

  it("says why it writes the file again in Russian and Japanese", async () => {
    const text = gatewayFile("litellm", [model("a", "serving")], { apiKey: false }).text;
    const stored = { ...gw(), sha256: sha256(text) };
    const edited = sha256(`${text}# edit\n`);
    const ru = await saidUnder("ru", () => gatewayDiff("id", stored, gw(edited)));
    expect(ru).toEqual([
      `sm121: gateway: файл ~/gw.yaml изменён после того, как sm121 его записал (sha256 ${sha256(text).slice(0, 12)} ` +
        `-> ${edited.slice(0, 12)}); этот up запишет его снова, сделав резервную копию`,
    ]);
    const ja = await saidUnder("ja", () => gatewayDiff("id", stored, gw("")));
    expect(ja).toEqual([
      "sm121: gateway: ファイル ~/gw.yaml は sm121 が書き込んだ後に削除されました。この up で再び書き込みます",
    ]);
  });

  it("writes the same bytes in every language, for every way an endpoint is disabled", () => {
    const models = [model("a", "serving"), model("b", "failed"), model("c", "removed")];
    const files = (locale: Locale) => {
      useLocale(locale);
      return (["sm121", "litellm", "llama-swap"] as const).flatMap((format) => {
        const f = gatewayFile(format, models, { apiKey: true });
        const off = (["failed", "destroyed", "restarting", "ended"] as const).map(
          (s) => disableEndpoints(format, f.text, "all", s).text,
        );
        return [f.text, ...off];
      });
    };
    const en = files("en");
    expect(en.join("\n")).toContain("disabled");
    for (const l of LOCALES) expect(files(l), l).toEqual(en);
  });

  it("notes the restart it needs in the reader's language", () => {
    const note = gatewayFile("litellm", [model("a", "serving")], { apiKey: false }).restartNote;
    expect(say(note, "en")).toMatch(/^LiteLLM reads its config at start/);
    expect(say(note, "ru")).not.toBe(say(note, "en"));
    expect(say(note, "ja")).not.toBe(say(note, "en"));
  });
});

describe("what the plan compares and what goes onto a node", () => {
  it("the bundles (their .env files among them) and the plan's lines are the same bytes in every language", () => {
    useLocale("en");
    const en = render().map((x) => [pack(x), deploymentPlan(x)]);
    expect(en.some(([, plan]) => (plan ?? "").includes(".env"))).toBe(true);
    for (const l of LOCALES) {
      useLocale(l);
      expect(
        render().map((x) => [pack(x), deploymentPlan(x)]),
        l,
      ).toEqual(en);
    }
  });
});

describe("the scrape file's warnings, stored with it", () => {
  const bundles = render();
  const { warnings } = scrapeFile(bundles, undefined);

  it("are messages, said in the reader's language where they are printed", () => {
    expect(warnings.length).toBeGreaterThan(0);
    const w = warnings[0] ?? msg("state.recorded", { text: "" });
    expect(say(w, "en")).toMatch(/^qwen38-flash-datagen on flash-datagen listens on 127\.0\.0\.1: /);
    expect(say(w, "ru")).toMatch(/^qwen38-flash-datagen на flash-datagen слушает 127\.0\.0\.1: /);
    expect(say(w, "ja")).toMatch(/^flash-datagen の qwen38-flash-datagen は 127\.0\.0\.1 で待ち受けています/);
  });

  it("an older sm121's English warnings: kept whole as recorded texts (ScrapeTargets 1 -> 2)", () => {
    const old = {
      path: "/p/sm121.json",
      targets: "",
      connection: CONNECTION,
      __file: { content: "[]\n", warnings: ["w1"], found: { sha256: null } },
      stateVersion: 1,
    };
    const { state } = upgrade("ScrapeTargets", old);
    expect(state.__file.warnings).toEqual([{ key: "state.recorded", args: { text: "w1" } }]);
    expect(state.__file.content).toBe("[]\n");
    expect(upgrade("ScrapeTargets", state).state).toEqual(state);
  });
});

describe("the memory fit's sources a driver names", () => {
  it("are said in the reader's language; a setting's own name in none", () => {
    const sglang = DRIVERS.sglang.memory.knobs({ nodes: 1 }).util.from;
    expect([say(sglang, "en"), say(sglang, "ru"), say(sglang, "ja")]).toEqual([
      "the engine's default (about)",
      "значение движка по умолчанию (примерно)",
      "エンジンの既定値（概算）",
    ]);
    const r = DRIVERS.vllm.memory.knobs({ keys: { GPU_MEMORY_UTILIZATION: "0.7" }, nodes: 1 }).util.from;
    expect(LOCALES.map((l) => say(r, l))).toEqual(LOCALES.map(() => "GPU_MEMORY_UTILIZATION"));
  });
});

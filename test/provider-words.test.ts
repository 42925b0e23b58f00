/**
 * What the providers print under a resource while Pulumi works (the surge's plan and its start
 * without a spare, what a destroy leaves of a model and an image, the old hook resource) in each
 * of the six languages: every line names its values (nodes, paths, images) as they are, and the
 * English reads exactly as it did before it was a message. These calls touch no node.
 */
import { afterEach, describe, expect, it } from "vitest";
import * as hostCommand from "../src/providers/hostCommandImpl";
import * as imageSync from "../src/providers/imageSyncImpl";
import * as modelCache from "../src/providers/modelCacheImpl";
import { STATE_VERSIONS } from "../src/providers/stateVersion";
import * as surge from "../src/providers/surgeImpl";
import type { ImageSyncWire, ModelCacheWire, SurgeWire } from "../src/providers/wire";
import { LOCALES, msg, say, useLocale, type Locale } from "../src/text/messages";
import { saidUnder } from "./helpers/said";
import { CONNECTION } from "./helpers/wire";

/** The provider's stderr lines while `run` runs, in `locale`, and what it threw. */
async function said(locale: Locale, run: () => Promise<unknown>): Promise<string[]> {
  let thrown: string[] = [];
  const lines = await saidUnder(locale, () =>
    run().catch((e: unknown) => (thrown = [`thrown: ${e instanceof Error ? e.message : String(e)}`])),
  );
  return [...lines, ...thrown];
}

afterEach(() => useLocale("en"));

const conn = { kind: "ssh" as const, host: "127.0.0.1", port: 22, user: "root" };
const node = (name: string) => ({ node: name, conn, ip: "127.0.0.1", stateDir: "~/.sm121" });

const surgeWire = (phase: "start" | "end", set: Record<string, string>, go = true): SurgeWire => ({
  phase,
  deployment: "q8-spare",
  nodes: ["spark3", "spark4"],
  go,
  why: go ? "" : "spark3 is protected",
  __set: set,
  secrets: {},
  connection: CONNECTION,
  __bundle: "",
  __run: { model: { deployment: "q8-spare", model: "q", status: "serving", endpoints: [] }, apiKey: false },
  stateVersion: STATE_VERSIONS.Surge,
});

const model: ModelCacheWire = {
  deployment: "qwen",
  repo: "Qwen/Qwen3-32B",
  revision: "main",
  nodes: [
    { ...node("spark1"), hfHome: "/data/hf" },
    { ...node("spark2"), hfHome: "/data/hf" },
  ],
  protectedNodes: [],
  onDelete: "keep",
  connection: CONNECTION,
  stateVersion: STATE_VERSIONS.ModelCache,
};

const image: ImageSyncWire = {
  deployment: "qwen",
  image: "nvcr.io/nvidia/vllm:25.09-py3",
  nodes: [node("spark1"), node("spark2")],
  connection: CONNECTION,
  stateVersion: STATE_VERSIONS.ImageSync,
};

/** Every line the providers print here, in `locale`. */
async function allLines(locale: Locale): Promise<string[]> {
  const before = { "q8-1": "a1", "q8-2": "b1" };
  const after = { "q8-1": "a2", "q8-2": "b2" };
  return [
    ...(await said(locale, () => surge.diff("q8-spare-start", surgeWire("start", before), surgeWire("start", after)))),
    ...(await said(locale, () => surge.diff("q8-spare-end", surgeWire("end", before), surgeWire("end", after)))),
    // Without a surge (go: false) the start touches nothing and says nothing: the plan's line says why.
    ...(await said(locale, () =>
      surge.update("q8-spare-start", surgeWire("start", before, false), surgeWire("start", after, false)),
    )),
    ...(await said(locale, () => modelCache.remove("qwen-model", model))),
    ...(await said(locale, () => imageSync.remove("qwen-image", image))),
    ...(await said(locale, () =>
      hostCommand.remove("h", { node: "spark1", stateVersion: STATE_VERSIONS.HostCommand }),
    )),
    ...(await said(locale, () => hostCommand.create())),
  ];
}

describe("the providers' lines in Pulumi's output", () => {
  it("read in English exactly as they did before they were messages", async () => {
    expect(await allLines("en")).toEqual([
      "sm121: q8-spare: starts the new recipe on spark3, spark4 before any replica of the set stops",
      "sm121: q8-spare: stops on spark3, spark4 once every replica answers; the spare is free again",
      "sm121: qwen model: the checkpoint Qwen/Qwen3-32B stays in the HF cache on spark1, spark2 " +
        "(/data/hf/hub/models--Qwen--Qwen3-32B); set sm121:modelCache: remove to delete it with the deployment",
      "sm121: qwen image: nvcr.io/nvidia/vllm:25.09-py3 stays on spark1, spark2; " +
        "remove it there with docker image rm if you no longer need it",
      "sm121: spark1: the old hook resource is dropped from the state; " +
        "hooks now run with the engine (nothing runs on the node for this)",
      "thrown: HostCommand is no longer created: hooks run with the engine (EngineDeployment)",
    ]);
  });

  it("are said in Russian", async () => {
    const ru = await allLines("ru");
    expect(ru[0]).toBe(
      "sm121: q8-spare: запускает новый рецепт на spark3, spark4 до того, как остановится любая реплика группы",
    );
    expect(ru[2]).toBe(
      "sm121: qwen model: контрольная точка Qwen/Qwen3-32B остаётся в HF-кэше на spark1, spark2 " +
        "(/data/hf/hub/models--Qwen--Qwen3-32B); укажите sm121:modelCache: remove, " +
        "чтобы удалять её вместе с развёртыванием",
    );
  });

  it.each(LOCALES.filter((l) => l !== "en"))("name every value as it is in %s, in words of their own", async (l) => {
    const lines = await allLines(l);
    const english = await allLines("en");
    expect(lines).toHaveLength(english.length);
    const values = [
      ["spark3, spark4"],
      ["spark3, spark4"],
      ["Qwen/Qwen3-32B", "spark1, spark2", "/data/hf/hub/models--Qwen--Qwen3-32B", "sm121:modelCache: remove"],
      ["nvcr.io/nvidia/vllm:25.09-py3", "spark1, spark2", "docker image rm"],
      ["sm121: spark1: "],
      ["HostCommand", "EngineDeployment"],
    ];
    lines.forEach((line, i) => {
      for (const v of values[i] ?? []) expect(line, line).toContain(v);
      expect(line).not.toBe(english[i]);
    });
  });
});

describe("the model cache's and the surge's messages with their values", () => {
  const cases = [
    msg("model.removed", { repo: "Qwen/Qwen3-32B", nodes: "spark1, spark2", keep: "" }),
    msg("model.removedNone", { repo: "Qwen/Qwen3-32B", keep: "" }),
    msg("model.lackedMore", { node: "spark2", files: "config.json; model-00001.safetensors", count: 5 }),
    msg("model.otherStays", { model: "Qwen/Qwen3-32B@main", nodes: "spark1" }),
    msg("surge.failed", { deployment: "q8-spare", nodes: "spark3", why: "readiness failed: engine exited" }),
    msg("surge.ended", { deployment: "q8-spare", nodes: "spark3, spark4" }),
    msg("hooks.noHostKey", {
      knownHosts: "~/.ssh/known_hosts",
      known: "[10.0.0.3]:2222",
      node: "spark3",
      port: 2222,
      host: "10.0.0.3",
    }),
  ];

  it.each(LOCALES)("says every value in %s", (l) => {
    for (const m of cases) {
      const text = say(m, l);
      for (const v of Object.values(m.args ?? {}))
        if (typeof v !== "object" && v !== "") expect(text).toContain(String(v));
    }
  });

  it("says who keeps a removed model: one protected node or several", () => {
    const kept = (nodes: string[], l: Locale) =>
      say(msg(nodes.length === 1 ? "model.protectedKeeps" : "model.protectedKeep", { nodes: nodes.join(", ") }), l);
    expect(kept(["spark2"], "en")).toBe("; protected spark2 keeps it");
    expect(kept(["spark2", "spark3"], "en")).toBe("; protected spark2, spark3 keep it");
    expect(kept(["spark2"], "ru")).toBe("; защищённый узел spark2 сохраняет его");
    expect(kept(["spark2", "spark3"], "de")).toBe("; die geschützten Knoten spark2, spark3 behalten ihn");
  });
});

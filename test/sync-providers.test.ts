/**
 * ModelCache's and ImageSync's diffs (pure) and their light updates: what only the state keeps
 * (a node's new ssh address, what a delete does) is recorded without touching a node; the model,
 * the caches, an image ID that moved or what a refresh found missing reach the nodes.
 */
import { STATE_VERSIONS } from "../src/providers/stateVersion";
import { describe, expect, it } from "vitest";
import * as image from "../src/providers/imageSyncImpl";
import * as model from "../src/providers/modelCacheImpl";

// TEST-NET addresses with a short dial: an update that tried to reach a node would fail.
const conn = (host: string) => ({ kind: "ssh" as const, host, port: 22, user: "ops" });
const connection = { knownHosts: "/nonexistent/known_hosts", hostKeys: "strict" as const, dialTimeoutMs: 200 };
const nodes = (host2: string) => [
  {
    node: "s1",
    conn: conn("192.0.2.1"),
    ip: "192.0.2.1",
    stateDir: "~/.sm121",
    hfHome: "/home/ops/.cache/huggingface",
  },
  { node: "s2", conn: conn(host2), ip: "192.0.2.2", stateDir: "~/.sm121", hfHome: "/home/ops/.cache/huggingface" },
];
const v = { stateVersion: STATE_VERSIONS.ModelCache };
const modelState = {
  ...v,
  deployment: "d",
  repo: "Qwen/Qwen3-32B",
  revision: "main",
  nodes: nodes("192.0.2.2"),
  protectedNodes: [],
  onDelete: "keep" as const,
  connection,
  commit: "a".repeat(40),
  files: 6,
  bytes: 1000,
  source: "s1",
};
const inputs = {
  ...v,
  deployment: "d",
  repo: "Qwen/Qwen3-32B",
  revision: "main",
  nodes: nodes("192.0.2.2"),
  protectedNodes: [],
  onDelete: "keep" as const,
  connection,
};

describe("ModelCache", () => {
  it("is a no-op when nothing changed; a new revision, a moved cache or a refresh's gap reach the nodes", async () => {
    expect((await model.diff("d-model", modelState, inputs)).changes).toBe(false);
    expect((await model.diff("d-model", modelState, { ...inputs, revision: "v2" })).changes).toBe(true);
    expect(
      (
        await model.diff("d-model", modelState, {
          ...inputs,
          nodes: inputs.nodes.map((n) => ({ ...n, hfHome: "/srv/hf" })),
        })
      ).changes,
    ).toBe(true);
    expect((await model.diff("d-model", { ...modelState, incomplete: { s2: ["refs/main"] } }, inputs)).changes).toBe(
      true,
    );
  });

  it("records a node's new address and the delete mode without reaching a node", async () => {
    const moved = { ...inputs, nodes: nodes("192.0.2.22"), onDelete: "remove" as const };
    expect((await model.diff("d-model", modelState, moved)).changes).toBe(true);
    const outs: unknown = (await model.update("d-model", modelState, moved)).outs;
    expect(outs).toMatchObject({ commit: modelState.commit, bytes: 1000, onDelete: "remove", nodes: moved.nodes });
  });
});

describe("ImageSync", () => {
  const id = `sha256:${"c".repeat(64)}`;
  const at = { stateVersion: STATE_VERSIONS.ImageSync };
  const state = {
    ...at,
    deployment: "d",
    image: "nvcr.io/nvidia/vllm:26.01-py3",
    nodes: nodes("192.0.2.2").map(({ hfHome: _h, ...n }) => n),
    connection,
    imageId: id,
    ids: { s1: id, s2: id },
    source: "s1",
  };
  const { imageId: _i, ids: _ids, source: _s, ...args } = state;

  it("is a no-op when nothing changed; a new reference or an ID that moved on a node reach the nodes", async () => {
    expect((await image.diff("d-image", state, args)).changes).toBe(false);
    expect((await image.diff("d-image", state, { ...args, image: "nvcr.io/nvidia/vllm:25.11-py3" })).changes).toBe(
      true,
    );
    expect((await image.diff("d-image", { ...state, ids: { s1: id, s2: null } }, args)).changes).toBe(true);
  });

  it("records a node's new address without reaching a node", async () => {
    const moved = { ...args, nodes: nodes("192.0.2.22").map(({ hfHome: _h, ...n }) => n) };
    expect((await image.diff("d-image", state, moved)).changes).toBe(true);
    expect((await image.update("d-image", state, moved)).outs).toMatchObject({ imageId: id, nodes: moved.nodes });
  });
});

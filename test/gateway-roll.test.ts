/**
 * The gateway file during a roll: a replica's entries disabled before its engine stops (the other
 * replica's stay), the file as it was once it answers again, and left to the up's gateway resource
 * when something else wrote it meanwhile. LiteLLM's router settings when a model has replicas.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { afterEach, describe, expect, it } from "vitest";
import { leave, placeOf, rejoin } from "../src/gateway/steps.serve";
import type { ReplicaPlace } from "../src/render/replicas";
import { rollStep } from "../src/gateway/roll.render";
import { gatewayFile, type GatewayModel } from "../src/gateway/file.render";

const model = (deployment: string, node: string): GatewayModel => {
  const url = `http://203.0.113.${node === "r1" ? 1 : 2}:8000`;
  return { deployment, model: "roll-model", status: "serving", endpoints: [{ node, url, reachable: true }] };
};
const TWO = [model("roll-1", "r1"), model("roll-2", "r2")];
const auth = { knownHosts: "/dev/null", hostKeys: "strict" as const };
const said: string[] = [];
const log = (m: string) => void said.push(m);
/** A replica of a roll with no drain (its engine exports no gauge): its leave holds its entries only. */
const replica = (format: "litellm" | "sm121"): ReplicaPlace => ({
  model: "roll-model",
  index: 1,
  of: 2,
  roll: "one",
  step: rollStep(format, 0),
});
const bundle = (deployment: string) => ({ deployment, nodes: [] });
const hold = (path: string, format: "litellm" | "sm121", deployment: string, node: string) =>
  leave(replica(format), { place: placeOf({ path, format }, auth), nodes: [node] }, bundle(deployment), auth, log);

type Lite = { model_list: Array<{ model_info: { id: string } }>; router_settings?: Record<string, unknown> };
const ids = (text: string) => (parse(text) as Lite).model_list.map((m) => m.model_info.id);

describe("the gateway file during a roll", () => {
  let dir = "";
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const setUp = (format: "litellm" | "sm121") => {
    dir = mkdtempSync(join(tmpdir(), "sm121-gwroll-"));
    const path = join(dir, "gw.yaml");
    const text = gatewayFile(format, TWO, { apiKey: false }).text;
    writeFileSync(path, text);
    return { path, text };
  };

  it("disables the restarting replica's entry, keeps the other's, and restores the file when it answers", async () => {
    const { path, text } = setUp("litellm");
    expect(ids(text)).toEqual(["roll-1-r1", "roll-2-r2"]);
    const held = await hold(path, "litellm", "roll-1", "r1");
    const during = readFileSync(path, "utf8");
    expect(ids(during)).toEqual(["roll-2-r2"]);
    const why = "the replica is restarting in a roll";
    expect(during).toContain(`# disabled: roll-model on r1 (http://203.0.113.1:8000): ${why}`);
    if (held === undefined) throw new Error("nothing was held");
    await rejoin(held, log);
    expect(readFileSync(path, "utf8")).toBe(text);
    // Files sm121 wrote itself get no backup.
    expect(readdirSync(dir).filter((f) => f.includes("sm121-bak"))).toEqual([]);
  });

  it("leaves a file that something else wrote during the restart to the up's gateway resource", async () => {
    const { path } = setUp("sm121");
    const held = await hold(path, "sm121", "roll-2", "r2");
    type Doc = { models: Array<{ status: string; endpoints: Array<{ enabled: boolean }> }> };
    const doc = JSON.parse(readFileSync(path, "utf8")) as Doc;
    // Seed 001's gateway refuses a model with no enabled endpoint: a one-node replica's stays enabled.
    const states = doc.models.map((m) => [m.status, m.endpoints[0]?.enabled]);
    expect(states).toEqual([
      ["serving", true],
      ["restarting", true],
    ]);
    writeFileSync(path, "{}\n");
    if (held === undefined) throw new Error("nothing was held");
    await rejoin(held, log);
    expect(readFileSync(path, "utf8")).toBe("{}\n");
  });

  it("holds nothing when there is no file yet", async () => {
    dir = mkdtempSync(join(tmpdir(), "sm121-gwroll-"));
    expect(await hold(join(dir, "none.yaml"), "litellm", "roll-1", "r1")).toBeUndefined();
  });

  it("gives LiteLLM retries, a failover off the failed replica and no cooldowns only when a model has replicas", () => {
    const two = parse(gatewayFile("litellm", TWO, { apiKey: false }).text) as Lite;
    const settings = { num_retries: 3, retry_after: 0, enable_weighted_failover: true, disable_cooldowns: true };
    expect(two.router_settings).toEqual(settings);
    const one = parse(gatewayFile("litellm", [model("solo", "r1")], { apiKey: false }).text) as Lite;
    expect(one.router_settings).toBeUndefined();
  });
});

/**
 * The state versions (src/providers/stateVersion) on the stacks earlier releases really wrote
 * (test/fixtures/state, recorded by test/e2e/state-upgrade.test.ts): each resource's outputs are
 * recognized at the version its release wrote, and each upgrade function turns them into the
 * current form without losing what the provider reads back (the bundle, the connection, the
 * outcome, the file's sha256, the model's commit).
 */
import { describe, expect, it } from "vitest";
import { oldsFromWire } from "../src/providers/engineWire";
import { remove as hostCommandRemove } from "../src/providers/hostCommandImpl";
import { unpack } from "../src/providers/packed";
import { STATE_VERSIONS, stale, upgrade, type StateKind } from "../src/providers/stateVersion";
import type { DeploymentBundle } from "../src/render/types";
import { fromFixture, readFixture, RECORDED_RELEASES, type StateResource } from "./helpers/stateFixture";
import { msg, say } from "../src/text/messages";

const SECRET = "4dabf18193072939515e22adb298388d";

/** A resource's outputs as the provider receives them: secrets as their plain values. */
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v !== "object" || v === null) return v;
  const o = v as Record<string, unknown>;
  if (SECRET in o && typeof o["plaintext"] === "string") return JSON.parse(o["plaintext"]) as unknown;
  return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, plain(x)]));
}

function resources(release: string): Array<{ kind: StateKind; name: string; outputs: Record<string, unknown> }> {
  const f = fromFixture(readFixture(release), { checkout: "/checkout", privateKey: "key" });
  return f.deployment.resources.flatMap((r: StateResource) => {
    const kind = /^pulumi-nodejs:dynamic\/sm121:(\w+)$/.exec(r.type)?.[1] as StateKind | undefined;
    const name = r.urn.split("::").pop() ?? "";
    return kind === undefined ? [] : [{ kind, name, outputs: plain(r.outputs) as Record<string, unknown> }];
  });
}

const of = (release: string, name: string) => {
  const r = resources(release).find((x) => x.name === name);
  if (r === undefined) throw new Error(`${release} has no resource ${name}`);
  return r;
};

/** The version each release wrote, by resource kind. */
const WRITTEN: Record<string, Partial<Record<StateKind, number>>> = {
  "9492e6f": { EngineDeployment: 1, DgppProvision: 1, GatewayFragment: 1, HostCommand: 1 },
  "057f8f4": { EngineDeployment: 2, DgppProvision: 2, GatewayFragment: 2, ModelCache: 1 },
};

describe.each(RECORDED_RELEASES)("the stack release %s wrote", (release) => {
  it("is recognized at the versions that release wrote, and upgraded to this build's", () => {
    const found = resources(release);
    expect(new Set(found.map((r) => r.kind))).toEqual(new Set(Object.keys(WRITTEN[release] ?? {})));
    for (const r of found) {
      const u = upgrade(r.kind, r.outputs);
      expect([r.name, u.from, u.versioned]).toEqual([r.name, WRITTEN[release]?.[r.kind], false]);
      expect(u.state.stateVersion).toBe(STATE_VERSIONS[r.kind]);
      expect(stale(u)).toBe(true);
      // Upgraded once, it is current: a second upgrade changes nothing.
      const again = upgrade(r.kind, u.state);
      expect([again.state, again.versioned, stale(again)]).toEqual([u.state, true, false]);
    }
  });

  it("keeps each deployment's bundle, connection, secrets and outcome, which delete and read act on", () => {
    for (const name of ["tm-engine", "dk-engine", "dg-engine"]) {
      const stored = of(release, name).outputs;
      const bundle =
        "bundle" in stored
          ? (stored["bundle"] as DeploymentBundle)
          : unpack<DeploymentBundle>(stored["__bundle"] as string);
      const { state } = upgrade("EngineDeployment", stored);
      expect(unpack<DeploymentBundle>(state.__bundle)).toEqual(bundle);
      expect(state.deployment).toBe(bundle.deployment);
      const kept = [stored["connection"], stored["secrets"], stored["outcome"]];
      // The outcome's warnings an older release wrote in English say the same words, as recorded texts.
      const o = state.outcome;
      const outcome = o === undefined ? undefined : { ...o, warnings: o.warnings.map((w) => say(w, "en")) };
      expect([state.connection, state.secrets, outcome]).toEqual(kept);
      expect(state.__run.gateway).toEqual(stored["gateway"] ?? (stored["__run"] as { gateway: unknown }).gateway);
      expect(state.__run.allow).toEqual(stored["allow"] ?? (stored["__run"] as { allow: unknown }).allow);
      // The provider's view says the state is rewritten, which restarts nothing (providers/engineDecide).
      expect(say(oldsFromWire(stored).upgrade ?? msg("state.recorded", { text: "" }), "en")).toMatch(
        /^the EngineDeployment state is rewritten from the unversioned form of version \d to version 6/,
      );
    }
  });

  it("keeps the gateway file's place and sha256; the models it was rendered from were never stored", () => {
    const stored = of(release, "gateway").outputs;
    const { state } = upgrade("GatewayFragment", stored);
    const place = [state.path, state.format, state.node, state.sha256];
    expect(place).toEqual(["~/litellm/models.yaml", "litellm", "u1", stored["sha256"]]);
    const conn = state.__file.conn;
    expect(conn?.kind === "ssh" ? conn.host : "").toMatch(/^127\.0\.0\.\d+$/);
    expect([state.__file.models, state.__file.lingering, state.__file.apiKey]).toEqual([[], [], false]);
    const served = (stored["__file"] as { served?: string[] } | undefined)?.served ?? [];
    expect(state.__file.served).toEqual(served);
  });
});

describe.each(RECORDED_RELEASES)("the DGPP provisioning release %s stored", (release) => {
  it("keeps its bundle, rev, paths and marker, and lists the staged files as the plan shows them", () => {
    const stored = of(release, "dg-dgpp").outputs;
    const { state } = upgrade("DgppProvision", stored);
    const bundle =
      "bundle" in stored
        ? (stored["bundle"] as DeploymentBundle)
        : unpack<DeploymentBundle>(stored["__bundle"] as string);
    expect(unpack(state.__bundle)).toEqual(bundle);
    const kept = [stored["rev"], stored["rev"], stored["paths"], false];
    expect([state.rev, state.marker, state.paths, "bundle" in state]).toEqual(kept);
    expect(state.staged).toEqual([
      expect.stringMatching(/^u3 ~\/dgpp\/sm121-dg\.json sha256 [0-9a-f]{12}$/),
      expect.stringMatching(/^u3 ~\/dgpp\/\.env sha256 [0-9a-f]{12}$/),
    ]);
    if ("staged" in stored) expect(state.staged).toEqual(stored["staged"]);
  });
});

describe("an outcome whose failure an older sm121 wrote in English (EngineDeployment 2 -> 3)", () => {
  // As 057f8f4's serve wrote a failed readiness, and as it held a deployment for its health.
  const failure = "readiness failed: spark1: the engine did not answer /v1/models within 60 s";
  const failedAt = (release: string, versioned: boolean) => {
    const stored = of(release, "tm-engine").outputs;
    const outcome = { status: "failed", nodes: [], warnings: [], failure, rolledBack: false };
    return { ...stored, outcome, ...(versioned && { stateVersion: 2 }) };
  };

  it.each([
    ["057f8f4", false],
    ["057f8f4", true],
    ["9492e6f", false],
  ] as const)("keeps the text whole as a recorded message (%s, versioned %s), and the rest of the outcome", (r, v) => {
    const stored = failedAt(r, v);
    const { state, from } = upgrade("EngineDeployment", stored);
    expect(from).toBe(r === "9492e6f" ? 1 : 2);
    expect(state.outcome).toEqual({
      status: "failed",
      nodes: [],
      warnings: [],
      rolledBack: false,
      failure: { key: "state.recorded", args: { text: failure } },
    });
    // Said in any language, the old words stay as they were recorded; nothing is guessed back.
    const f = state.outcome?.failure ?? msg("state.recorded", { text: "" });
    expect(say(f, "en")).toBe(failure);
    expect(say(f, "ru")).toContain(failure);
    expect(say(f, "ja")).toContain(failure);
    expect(say(f, "ru")).not.toBe(failure);
    // Upgraded once, it is current.
    expect(upgrade("EngineDeployment", state).state).toEqual(state);
  });

  it("leaves an outcome without a failure as it was", () => {
    const stored = of("057f8f4", "tm-engine").outputs;
    expect(upgrade("EngineDeployment", { ...stored, stateVersion: 2 }).state.outcome).toEqual(stored["outcome"]);
  });
});

describe("upgrades of kinds only one release had", () => {
  it("ModelCache (057f8f4): every field kept, the version added", () => {
    const stored = of("057f8f4", "dk-model").outputs;
    const { state } = upgrade("ModelCache", stored);
    expect(state).toEqual({ ...stored, stateVersion: 1 });
    expect(state.commit).toMatch(/^[0-9a-f]{40}$/);
  });

  it("HostCommand (9492e6f): its delete runs on nothing but the node's name, and says so", async () => {
    const stored = of("9492e6f", "tm-hooks-u1").outputs;
    expect(upgrade("HostCommand", stored).state.node).toBe("u1");
    await expect(hostCommandRemove("id", stored)).resolves.toBeUndefined();
  });
});

describe("states no release of this checkout can read", () => {
  it("refuses a newer version, naming what to do", () => {
    const { state } = upgrade("ModelCache", of("057f8f4", "dk-model").outputs);
    expect(() => upgrade("ModelCache", { ...state, stateVersion: 2 })).toThrow(
      "sm121 ModelCache: the state is at version 2, written by a newer sm121 than this checkout " +
        "(which knows up to 1); " +
        "update this checkout (`git pull && npm ci`) before running pulumi on this stack",
    );
  });

  it("refuses a shape no release wrote, naming its keys", () => {
    expect(() => upgrade("EngineDeployment", { deployment: "x", plan: "" })).toThrow(
      /no sm121 release wrote \(keys: deployment, plan\)/,
    );
  });

  it("parses what the engine passes in before reading it: no object, or a stateVersion that is no version", () => {
    const { state } = upgrade("ModelCache", of("057f8f4", "dk-model").outputs);
    for (const stateVersion of [0, 1.5, "1", null]) {
      expect(() => upgrade("ModelCache", { ...state, stateVersion })).toThrow(
        /no sm121 release wrote \(keys: .*stateVersion/,
      );
    }
    for (const stored of [undefined, null, "text", [state]]) {
      expect(() => upgrade("ModelCache", stored)).toThrow(/sm121 ModelCache: the stored outputs have a shape/);
    }
  });
});

/** The keeper's decisions (cli/keepdecide): repairs health only, backs off, gives up, leaves what it must. */
import { describe, expect, it } from "vitest";
import { failed, freshMemory, keepVerdict, memoryOf, repaired, sinceServed } from "../src/cli/keepdecide";
import type { DeploymentBundle } from "../src/render/types";
import type { SiteObservation } from "../src/serve/observe";
import { readyScript } from "../src/serve/nodelife";
import { msg } from "../src/text/messages";
import { KEEP_DEFAULTS } from "../src/recipe/types";
import { bashSyntax } from "./hostile/helpers";

const dead = msg("serve.look.notRunning", { node: "k1", detail: "gone" });
const bundle = (protectedNode = false) =>
  ({ deployment: "a", nodes: [{ node: "k1", protected: protectedNode }] }) as unknown as DeploymentBundle;
const seen = (o: Partial<SiteObservation> = {}): SiteObservation =>
  ({ drift: { a: [dead] }, health: { a: [dead] }, unknown: {}, life: {}, unapplied: {}, ...o }) as SiteObservation;
const S = { ...KEEP_DEFAULTS, backoffS: 30, backoffMaxS: 100, maxFailures: 3, windowS: 3600 };

describe("sm121 keep's verdict on a deployment", () => {
  it("repairs a dead engine, and nothing where all serves", () => {
    expect(keepVerdict(bundle(), seen(), [], freshMemory(), S, 0).kind).toBe("repair");
    expect(keepVerdict(bundle(), seen({ drift: {}, health: {} }), [], freshMemory(), S, 0).kind).toBe("well");
  });
  it("leaves a change nobody applied, a protected node without the allowance, and a node it could not see", () => {
    const other = msg("serve.look.otherBundle", { node: "k1" });
    expect(keepVerdict(bundle(), seen({ unapplied: { a: [other] } }), [], freshMemory(), S, 0)).toMatchObject({
      kind: "left",
      reason: "changed",
    });
    const edited = msg("serve.look.edited", { node: "k1", file: "x" });
    const v = keepVerdict(bundle(), seen({ drift: { a: [dead, edited] } }), [], freshMemory(), S, 0);
    expect(v).toMatchObject({ kind: "left", reason: "changed" });
    expect(keepVerdict(bundle(true), seen(), [], freshMemory(), S, 0)).toMatchObject({ reason: "protected" });
    expect(keepVerdict(bundle(true), seen(), ["k1"], freshMemory(), S, 0).kind).toBe("repair");
    expect(keepVerdict(bundle(), seen({ unknown: { a: [dead] } }), [], freshMemory(), S, 0).kind).toBe("unknown");
  });
  it("waits after a failure, doubling up to backoffMaxS, and gives up after maxFailures in the window", () => {
    const m = freshMemory();
    expect(failed(m, S, 0, dead)).toBe(false);
    expect(keepVerdict(bundle(), seen(), [], m, S, 10_000)).toMatchObject({ kind: "wait", untilMs: 30_000 });
    expect(keepVerdict(bundle(), seen(), [], m, S, 30_000).kind).toBe("repair");
    expect(failed(m, S, 30_000, dead)).toBe(false);
    expect(m.notBeforeMs).toBe(90_000);
    expect(failed(m, S, 90_000, dead)).toBe(true);
    expect(keepVerdict(bundle(), seen(), [], m, S, 500_000)).toMatchObject({ kind: "left", reason: "gave-up" });
    // Out of the window, the failures no longer count.
    expect(keepVerdict(bundle(), seen(), [], m, S, 90_000 + 3_600_000).kind).toBe("repair");
  });
  it("counts a stop by the memory tripwire as a failure, once", () => {
    const tripwire = { at: "2026-12-06T05:00:00Z", stoppedMs: 1, memAvailableKiB: 1, floorKiB: 2 };
    const life = { a: { k1: { boot: "b", tripwire } } };
    const m = freshMemory();
    expect(keepVerdict(bundle(), seen({ life }), [], m, S, 0).kind).toBe("wait");
    expect(keepVerdict(bundle(), seen({ life }), [], m, S, 30_000).kind).toBe("repair");
    expect(m.failures).toHaveLength(1);
  });
  it("leaves a deployment it gave up on, as its node records it, until an up serves it", () => {
    const gaveUp = { at: "t", count: 3, windowS: 3600, error: dead };
    const life = { a: { k1: { boot: "b", gaveUp } } };
    expect(keepVerdict(bundle(), seen({ life }), [], freshMemory(), S, 0)).toMatchObject({ reason: "gave-up" });
  });
});

describe("what an up writes once the engine is ready (serve/nodelife)", () => {
  it("is a script bash parses, with the tripwire's start where none runs", () => {
    const s = readyScript({ stateDir: "~/.sm121/deployments/a", runs: true });
    expect(bashSyntax(s)).toBe("");
    expect(s).toContain("tripwire.sh");
  });

  it("remembers from the node's keeper.json: the failures in the window, their backoff, none after a repair", () => {
    const cause = msg("keep.upFailed", { error: "boom" });
    const at = (ms: number) => new Date(ms).toISOString();
    const now = 10_000_000;
    const record = {
      failures: [
        { at: at(now - 7_200_000), cause },
        { at: at(now - 5_000), cause },
      ],
    };
    const m = memoryOf(record, S, now);
    expect(m.failures).toEqual([now - 5_000]);
    expect(m.lastError).toEqual(cause);
    expect(m.notBeforeMs).toBe(now - 5_000 + S.backoffS * 1000);
    const after = memoryOf({ ...record, last: { at: at(now), action: "repaired", why: [] } }, S, now);
    expect(after.notBeforeMs).toBe(0);
    expect(memoryOf(undefined, S, now)).toEqual(freshMemory());
  });

  it("forgets the failures once someone else's up served it after the keeper's last action", () => {
    const cause = msg("keep.upFailed", { error: "boom" });
    const now = Date.parse("2026-12-06T12:00:10Z");
    const m = freshMemory();
    m.tripped = ["2026-12-06T11:00:00Z"];
    failed(m, S, now - 4000, cause);
    failed(m, S, now, cause);
    expect(m.failures).toHaveLength(2);
    // The node's readyAt is older than the last failure: the keeper's own count stands.
    expect(sinceServed(m, "2026-12-06T12:00:09Z")).toBe(m);
    expect(sinceServed(m, undefined)).toBe(m);
    // An operator's up served it afterwards: a fresh count, the counted tripwire stops kept.
    const after = sinceServed(m, "2026-12-06T12:05:00Z");
    expect(after.failures).toEqual([]);
    expect(after.notBeforeMs).toBe(0);
    expect(after.tripped).toEqual(["2026-12-06T11:00:00Z"]);
    // The keeper's own repair serves before it records the repair: that serve is its own.
    const own = freshMemory();
    failed(own, S, now - 60_000, cause);
    repaired(own, now + 800);
    expect(sinceServed(own, "2026-12-06T12:00:10Z")).toBe(own);
  });
});

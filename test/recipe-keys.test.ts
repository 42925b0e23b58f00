/**
 * The "known keys" of an unknown-key error come from the schema itself (keysAt), at every depth:
 * top level (with the secret config keys, read through Pulumi), a node, its ssh block, a node
 * recipe (a record's value), a deployment (an array's element), the gateway, and a recipe's tables.
 */
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { errorsOf } from "./helpers/spec";

const F = "Pulumi.s.yaml";
const NODE = [
  "config:",
  "  sm121:nodes:",
  "    spark1:",
  "      ssh: { host: 203.0.113.1, user: ops }",
  "      ip: 203.0.113.1",
];
const site = (...lines: string[]) => errorsOf(() => parseSite(F, "s", `${[...NODE, ...lines].join("\n")}\n`));
const known = (messages: string[]) => messages.map((m) => /known keys: ([^)]*)\)/.exec(m)?.[1] ?? m);

describe("known keys, from the schemas", () => {
  it("lists the site's keys at every level", () => {
    const siteKeys = [
      "nodes, deployments, minMemAvailableGiB, memTimeoutS, readyGraceS, recipesDir, knownHosts, hostKeys, gateway",
      "scrapeTargets, rollback, dgppPollS, preflight, lockWaitS, drainS, keepBackups, hooks, modelCache, imageSync",
      "requireApiKey, fabric, fabricCheck, memFloorGiB, memSampleS, memRelief, keep, liveness",
      "hfToken, apiKey, sshPrivateKey, sshPassphrase",
    ];
    expect(known(site("  sm121:zzzz: 1"))).toEqual([siteKeys.join(", ")]);
    expect(known(site("      zzzz: 1"))).toEqual([
      "host, ssh, ip, protected, env, vars, gatewayUrl, gpuProbe, minMemAvailableGiB, memFloorGiB, memRelief, " +
        "recipes, stateDir, fabric, gpus",
    ]);
    expect(known(site("      recipes: { r: { dir: /x, container: c, zzzz: 1 } }"))).toEqual([
      "dir, start, stop, container, dockerArgs, vars, ownedMounts",
    ]);
    const entryKeys = "name, recipe, profile, nodes, replicas, roll, spare, overlay, overlayWins";
    expect(known(site("  sm121:deployments:", "    - { recipe: r, nodes: [spark1], zzzz: 1 }"))).toEqual([entryKeys]);
    expect(known(site("  sm121:gateway: { path: /g.json, zzzz: 1 }"))).toEqual(["path, format, model, node"]);
    expect(
      known(
        errorsOf(() =>
          parseSite(
            F,
            "s",
            "config:\n  sm121:nodes:\n    spark1:\n      ssh: { host: h, user: ops, zzzz: 1 }\n      ip: 203.0.113.1\n",
          ),
        ),
      ),
    ).toEqual(["host, port, user"]);
  });

  it("lists a recipe's keys in its tables", () => {
    const recipe = (text: string) =>
      known(errorsOf(() => parseRecipe("recipes/x.toml", `engine = "dgpp"\ndeploy = "native"\n${text}`)));
    expect(recipe("[dgpp]\nzzzz = 1\n")).toEqual(["repo, rev, dir, http_port, release, roce_devices, engine"]);
    expect(recipe("[readiness]\nzzzz = 1\n")).toEqual(["timeout_s, max_model_len, proofs"]);
  });
});

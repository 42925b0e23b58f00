/**
 * `sm121:hooks`: who runs the recipes' hooks. The built-in path (`engine`) is the default and needs
 * no plugin; `pulumi-command` asks for the command provider plugin. A wrong value is an error at
 * its line and column, with the values allowed.
 */
import { describe, expect, it } from "vitest";
import { parseSite } from "../src/recipe/site";
import { errorsOf } from "./helpers/spec";

const F = "Pulumi.s.yaml";
const ONE = ["config:", "  sm121:nodes:", "    spark1:", "      ssh: { host: 203.0.113.1, user: ops }", "      ip: 203.0.113.1", ""].join("\n");

describe("sm121:hooks", () => {
  it("is engine unless the site says otherwise", () => {
    expect(parseSite(F, "s", ONE).hooks).toBe("engine");
    expect(parseSite(F, "s", `${ONE}  sm121:hooks: pulumi-command\n`).hooks).toBe("pulumi-command");
  });

  it("refuses any other value at its line and column", () => {
    expect(errorsOf(() => parseSite(F, "s", `${ONE}  sm121:hooks: command\n`))).toEqual([`${F}:6:3: sm121:hooks: "command" is not allowed; use one of "engine", "pulumi-command"`]);
    expect(errorsOf(() => parseSite(F, "s", `${ONE}  sm121:hooks: { by: pulumi-command }\n`))).toEqual([`${F}:6:3: sm121:hooks: a table is not allowed; use one of "engine", "pulumi-command"`]);
  });
});

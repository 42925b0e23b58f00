/**
 * `sm121:hooks`: who runs the recipes' hooks. The built-in path (`engine`) is the default and needs
 * no plugin; `pulumi-command` asks for the command provider plugin. A wrong value is an error at
 * its line and column, with the values allowed.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSite } from "../src/recipe/site";
import { errorsOf, ONE_NODE } from "./helpers/spec";

const F = "Pulumi.s.yaml";

describe("sm121:hooks", () => {
  it("is engine unless the site says otherwise", () => {
    expect(parseSite(F, "s", ONE_NODE).hooks).toBe("engine");
    expect(parseSite(F, "s", `${ONE_NODE}  sm121:hooks: pulumi-command\n`).hooks).toBe("pulumi-command");
  });

  it("refuses any other value at its line and column", () => {
    expect(errorsOf(() => parseSite(F, "s", `${ONE_NODE}  sm121:hooks: command\n`))).toEqual([
      `${F}:6:3: sm121:hooks: "command" is not allowed; use one of "engine", "pulumi-command"`,
    ]);
    expect(errorsOf(() => parseSite(F, "s", `${ONE_NODE}  sm121:hooks: { by: pulumi-command }\n`))).toEqual([
      `${F}:6:3: sm121:hooks: a table is not allowed; use one of "engine", "pulumi-command"`,
    ]);
  });
});

describe("sm121 render with sm121:hooks: pulumi-command", () => {
  /** `sm121 render <glm53's deployment> --step <step>` of the examples fixture, with `extra` config lines. */
  function render(step: string, extra: string): string {
    const root = join(__dirname, "..");
    const dir = mkdtempSync(join(tmpdir(), "sm121-hooks-"));
    try {
      cpSync(join(root, "recipes"), join(dir, "recipes"), { recursive: true });
      writeFileSync(
        join(dir, "Pulumi.hk.yaml"),
        readFileSync(join(root, "test", "fixtures", "sites", "examples.yaml"), "utf8").replace(
          "config:\n",
          `config:\n${extra}`,
        ),
      );
      const env: NodeJS.ProcessEnv = { ...process.env, SM121_PROJECT: dir, SM121_LANG: "en" };
      const r = spawnSync(
        process.execPath,
        [
          join(root, "bin", "sm121"),
          "render",
          "glm53-full-tp4-gr8",
          "--stack",
          "hk",
          "--node",
          "gr8-2",
          "--step",
          step,
        ],
        { env, encoding: "utf8" },
      );
      expect(r.stderr).toBe("");
      return r.stdout;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it("shows the hooks in the engine's start by default, and none when Commands run them", () => {
    expect(render("start", "")).toContain("before_serve: sudo -n sysctl -w vm.compaction_proactiveness=0");
    expect(render("start", "  sm121:hooks: pulumi-command\n")).not.toContain("before_serve");
  });
});

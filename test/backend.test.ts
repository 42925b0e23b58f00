/**
 * Where sm121's verbs keep a stack's state and its secrets' passphrase (src/cli/backend.ts): the
 * operator's environment first, then the project's backend.url, then sm121's own ~/.sm121; made
 * only where a stack is made, with the modes that keep them the operator's, and said once.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { madeLines, stackSetup } from "../src/cli/backend";
import { projectYaml } from "../src/cli/initproject";
import { testDir } from "./helpers/tmp";

describe("a stack's state and passphrase", () => {
  it("are sm121's own under ~/.sm121, made only where a stack is made, and said once", () => {
    const home = testDir("sm121-backend-home-");
    const root = testDir("sm121-backend-project-");
    const look = stackSetup(root, {}, false, home);
    expect(look).toMatchObject({ from: "sm121", url: `file://${home}/.sm121/state`, made: [] });
    expect(existsSync(join(home, ".sm121"))).toBe(false);
    const made = stackSetup(root, {}, true, home);
    expect(made.made).toEqual(["state", "passphrase"]);
    expect(statSync(join(home, ".sm121", "state")).mode & 0o777).toBe(0o700);
    expect(statSync(join(home, ".sm121", "passphrase")).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(home, ".sm121", "passphrase"), "utf8")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(made.env).toMatchObject({
      PULUMI_BACKEND_URL: `file://${home}/.sm121/state`,
      PULUMI_CONFIG_PASSPHRASE_FILE: join(home, ".sm121", "passphrase"),
    });
    const said = madeLines(made).join("\n");
    expect(said).toContain("without it no command can read them, and the stack must be made again");
    expect(said).toContain(`export PULUMI_CONFIG_PASSPHRASE_FILE=${home}/.sm121/passphrase`);
    // The second time nothing is made, and nothing is said.
    const again = stackSetup(root, {}, true, home);
    expect([again.made, madeLines(again)]).toEqual([[], []]);
  });

  it("are the operator's when named, the environment before the project's backend.url", () => {
    const home = testDir("sm121-backend-home-");
    const root = testDir("sm121-backend-project-");
    writeFileSync(join(root, "Pulumi.yaml"), projectYaml({ from: "sm121", url: "file:///srv/state" }, "/opt/sm121"));
    expect(stackSetup(root, {}, false, home)).toMatchObject({ from: "project", url: "file:///srv/state" });
    const env = { PULUMI_BACKEND_URL: "postgres://ops:s3cret@db:5432/pulumi", PULUMI_CONFIG_PASSPHRASE: "x" };
    const named = stackSetup(root, env, true, home);
    expect(named).toMatchObject({ from: "env", made: [] });
    // Neither a passphrase made nor a backend's password ever said.
    expect(named.passphraseFile).toBeUndefined();
    expect(named.shown).toBe("postgres://db:5432/pulumi");
    expect(existsSync(join(home, ".sm121"))).toBe(false);
  });
});

/** An overlay's identity is the same from any checkout of the project (no absolute path in it). */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadProject } from "../src/project";
import { testDir } from "./helpers/tmp";

const REPO = resolve(__dirname, "..");

function checkout(): string {
  const dir = testDir("sm121-overlay-");
  cpSync(join(REPO, "recipes"), join(dir, "recipes"), { recursive: true });
  cpSync(join(REPO, "test", "fixtures", "overlays", "mtp-r3"), join(dir, "overlays", "mtp-r3"), { recursive: true });
  const site = readFileSync(join(REPO, "test", "fixtures", "sites", "examples.yaml"), "utf8").replace(
    "- { recipe: qwen38-flash, profile: best, nodes: [flash-best] }",
    "- { recipe: qwen38-flash, profile: best, nodes: [flash-best], overlay: overlays/mtp-r3, overlayWins: true }",
  );
  writeFileSync(join(dir, "Pulumi.ex.yaml"), site);
  return dir;
}

describe("overlays in the identity", () => {
  it("names the overlay as the site does, so two checkouts render the same identity", () => {
    const [a, b] = [loadProject(checkout(), "ex"), loadProject(checkout(), "ex")];
    const fa = a.bundles.find((d) => d.profile === "best");
    const fb = b.bundles.find((d) => d.profile === "best");
    expect(fa?.identity).toBeDefined();
    expect(fa?.identity).toBe(fb?.identity);
    const env = fa?.nodes[0]?.files.find((f) => f.path.endsWith("/.env"))?.content ?? "";
    expect(env).toMatch(/^# sm121-overlay: overlays\/mtp-r3 overlay-sha256=[0-9a-f]{64}$/m);
  });
});

/**
 * The unit lane (`npm run test:unit`): the site's real parts refuse to start in it, and every
 * file the lane leaves out exists.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SITE_TESTS } from "../vitest.unit.config.mjs";
import { REPO } from "./helpers/project";
import { pulumiEnv } from "./helpers/pulumi";
import { startSite } from "./site/site";

describe("the unit lane", () => {
  const was = process.env["SM121_TEST_LANE"];
  afterEach(() => {
    if (was === undefined) delete process.env["SM121_TEST_LANE"];
    else process.env["SM121_TEST_LANE"] = was;
  });

  it("refuses to start the simulated site or the Pulumi CLI, naming the list to put the file in", async () => {
    process.env["SM121_TEST_LANE"] = "unit";
    await expect(startSite({ dir: "/nonexistent/site", nodes: ["n1"] })).rejects.toThrow(
      /the simulated site is a real part of the test site.*SITE_TESTS \(vitest\.unit\.config\.mts\)/,
    );
    expect(() => pulumiEnv("/nonexistent/project")).toThrow(/the Pulumi CLI is a real part/);
  });

  it("leaves out only files that exist", () => {
    const missing = SITE_TESTS.filter((p) => !existsSync(join(REPO, p.replace(/\/\*\*$/, ""))));
    expect(missing).toEqual([]);
  });
});

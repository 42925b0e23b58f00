/**
 * The test lanes: `npm test` runs every test; `npm run test:unit` (SM121_TEST_LANE=unit) runs the
 * files that need none of the site's real parts, and this guard makes a file that starts one fail
 * there at once instead of slowing the lane down.
 */
export function needsRealParts(what: string): void {
  if (process.env["SM121_TEST_LANE"] !== "unit") return;
  throw new Error(
    `${what} is a real part of the test site, which npm run test:unit does not start; ` +
      "list this test file in SITE_TESTS (vitest.unit.config.mts), or run it with npm test",
  );
}

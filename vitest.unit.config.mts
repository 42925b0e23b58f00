import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.mjs";

/**
 * The files that start a real part of the test site (sshd, Docker, the Pulumi CLI, PostgreSQL,
 * Prometheus, LiteLLM): `npm test` runs them, `npm run test:unit` leaves them out. A file that
 * starts one and is not listed fails in the unit lane (test/site/lane.ts) and names this list.
 */
export const SITE_TESTS = [
  "test/e2e/**",
  "test/cli-ops.test.ts",
  "test/cli-render.test.ts",
  "test/cli-status.test.ts",
  "test/cli-verbs.test.ts",
  "test/fabric-site.test.ts",
  "test/gateway-keys.test.ts",
  "test/pulumi-proof.test.ts",
  "test/recipe-component.test.ts",
  "test/remote-knownhosts.test.ts",
  "test/remote-lock.test.ts",
  "test/remote-ssh.test.ts",
  "test/site-docker.test.ts",
  "test/site-hooks.test.ts",
  "test/site-transfer.test.ts",
  "test/site.test.ts",
];

// The unit lane reuses each worker's modules from one file to the next (isolate: false): most of its time was
// importing sm121's modules again for every file. `npm test` runs the same files isolated, so a test that leans
// on another file's module state fails in one of the two lanes.
// Three workers on two cores: a few files wait on timeouts of their own (a first token that never comes, NCCL's
// watchdog, a rendezvous), and a third worker keeps the cores busy meanwhile. The transformed modules are kept
// in node_modules/.experimental-vitest-cache, keyed by their content, so a run transforms only what changed.
export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: SITE_TESTS,
      isolate: false,
      maxWorkers: 3,
      experimental: { fsModuleCache: true },
      env: { SM121_TEST_LANE: "unit" },
    },
  }),
);

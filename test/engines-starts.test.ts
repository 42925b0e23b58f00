/**
 * What vLLM refuses at start, refused at plan time: each expected outcome is the real vLLM's own
 * answer, recorded per version by scripts/engine-options/starts.py (the real CLI parser, the serve
 * subcommand's validate and cmd up to the point where it would start something):
 * - `--api-server-count` on a headless rank (the ranks above 0 of a deployment of several nodes);
 * - `--config FILE`, which vLLM reads while it parses: not YAML is refused by validate, a file that
 *   is not on the node by the check every plan makes there (run here with bash, as on a node).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ENGINE_TABLES } from "../src/engines/options/table";
import { headlessApiServerLimit } from "../src/engines/vllm";
import { SpecErrors } from "../src/recipe/errors";
import { parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { preflightScript } from "../src/serve/steps";
import { recordOfLine, recordsOf } from "../src/protocol";

interface Recorded {
  engine: string;
  version: string;
  cases: Array<{ args: string[]; outcome: "starts" | "error" | "returned"; error?: string }>;
}

const FIXTURES = join(__dirname, "fixtures", "engine-options");
const recorded: Recorded[] = readdirSync(FIXTURES)
  .filter((f) => /^vllm-.*-starts\.json$/.test(f))
  .map((f) => JSON.parse(readFileSync(join(FIXTURES, f), "utf8")) as Recorded);
const work = mkdtempSync(join(tmpdir(), "sm121-starts-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A recipe of `args` for this vLLM version, run in tmux (so a --config path is a path on the node). */
function recipeText(version: string, args: string[]): string {
  return `model = "Q/q"\ndeploy = "tmux"\nport = 8000\nengine_version = "${version}"\nargs = ${JSON.stringify(args)}\n`;
}

/** What `sm121 validate` says of a deployment of `args` on `nodes` nodes: the errors, or none. */
function validate(version: string, args: string[], nodes: number): string[] {
  const names = Array.from({ length: nodes }, (_, i) => `n${i + 1}`);
  const site = parseSite(
    "Pulumi.t.yaml",
    "t",
    [
      "config:",
      "  sm121:nodes:",
      ...names.map((n, i) => `    ${n}: { host: local, ip: 127.0.0.${i + 1} }`),
      "  sm121:deployments:",
      `    - { recipe: r, nodes: [${names.join(", ")}] }`,
      "",
    ].join("\n"),
  );
  try {
    const r = parseRecipe(
      "recipes/r.toml",
      recipeText(version, args).replace("port = 8000", `port = 8000\ntp = ${nodes}`),
    );
    renderSite(site, new Map([["r", r]]), { root: work });
    return [];
  } catch (e) {
    if (e instanceof SpecErrors) return e.errors.map((x) => x.message);
    if (e instanceof Error) return [e.message];
    throw e;
  }
}

it("has a recording for vLLM 0.33.0 and for the version of NGC 25.10 (0.10.2), and a table for each recording", () => {
  expect(recorded.map((r) => r.version)).toEqual(expect.arrayContaining(["0.10.2", "0.33.0"]));
  for (const r of recorded) expect(ENGINE_TABLES.vllm.map((t) => t.version)).toContain(r.version);
});

describe.each(recorded.map((r) => [r.version, r] as const))("vLLM %s", (version, r) => {
  const servers = r.cases.filter(
    (c) => c.args.some((a) => /^(--api-server-count|-asc)/.test(a)) || c.args.join(" ") === "--headless",
  );

  // A vLLM whose parser has no --nnodes runs no deployment of several nodes (argparse: "unrecognized arguments").
  const multiNode =
    ENGINE_TABLES.vllm.find((t) => t.version === version)?.options.some((o) => o.dest === "nnodes") === true;

  it.each(servers.map((c) => [c.args.join(" "), c] as const))("`vllm serve m %s`: as the real one answers", (_, c) => {
    const headless = c.args.includes("--headless");
    // sm121 adds --headless to the ranks above 0: the recipe's args without it, on two nodes;
    // without it, rank 0 of one.
    const errors = validate(
      version,
      c.args.filter((a) => a !== "--headless"),
      headless ? 2 : 1,
    );
    if (headless && !multiNode) {
      expect(errors).toHaveLength(1);
      expect(errors[0]).toContain(`vLLM ${version} has no --nnodes`);
    } else if (c.outcome === "error") {
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(
        /^recipes\/r\.toml:\d+:\d+: args\[\d\]: --api-server-count \d reaches the headless ranks too/,
      );
      expect(errors[0]).toContain(`vLLM ${version} stops there`);
    } else expect(errors).toEqual([]);
  });

  it("the limit a headless rank takes is the one the recording shows", () => {
    const refusedAt = r.cases
      .filter((c) => c.args[0] === "--headless" && c.args[1] === "--api-server-count")
      .map((c) => [Number(c.args[2]), c.outcome === "error"] as const);
    for (const [n, refused] of refusedAt)
      expect(n > headlessApiServerLimit(version), `--api-server-count ${n}`).toBe(refused);
  });

  const configs = r.cases.filter((c) => c.args.some((a) => a.startsWith("--config")));
  it.each(configs.map((c) => [c.args.join(" "), c] as const))("`vllm serve m %s`: as the real one answers", (_, c) => {
    // The recording ran in a directory holding present.yaml and present.json; here they sit in `work`.
    writeFileSync(join(work, "present.yaml"), "max-model-len: 1024\n");
    writeFileSync(join(work, "present.json"), "{}\n");
    const args = c.args.map((a) =>
      /^(absent|present)\./.test(a) ? join(work, a) : a.replace(/=(absent|present)\./, `=${work}/$1.`),
    );
    const headless = args.includes("--headless");
    const recipeArgs = args.filter((a) => a !== "--headless");
    const errors = validate(version, recipeArgs, headless && multiNode ? 2 : 1);
    const refusedByValidate = errors.length > 0;
    let refusedOnNode = false;
    if (!refusedByValidate) {
      const site = parseSite(
        "Pulumi.t.yaml",
        "t",
        "config:\n  sm121:nodes:\n    n1: { host: local, ip: 127.0.0.1, stateDir: " +
          join(work, "state") +
          " }\n  sm121:deployments:\n    - { recipe: r, nodes: [n1] }\n",
      );
      const [b] = renderSite(site, new Map([["r", parseRecipe("recipes/r.toml", recipeText(version, recipeArgs))]]), {
        root: work,
      });
      const nb = b?.nodes[0];
      if (nb === undefined) throw new Error("no bundle");
      // The look every plan takes, without sm121:preflight: only the checks made at plan time.
      const out = spawnSync(
        "bash",
        ["-c", preflightScript(nb, [], undefined, { checks: false, runStatus: false, clients: false })],
        { encoding: "utf8", env: { ...process.env, HOME: work } },
      );
      const checks = recordsOf(
        out.stdout.split("\n").flatMap((l) => recordOfLine(l) ?? []),
        "check",
      );
      refusedOnNode = checks.some((r) => r.check === "file");
    }
    expect(refusedByValidate || refusedOnNode).toBe(c.outcome === "error");
    if (c.error?.startsWith("ValueError")) expect(errors[0]).toContain("takes only YAML");
    if (c.error?.startsWith("FileNotFoundError")) expect(refusedOnNode).toBe(true);
  });
});

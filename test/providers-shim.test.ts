/**
 * sm121 writes its provider text by hand instead of through Pulumi's closure serializer. That
 * leans on the dynamic provider host's contract in @pulumi/pulumi: the `__provider` property, a
 * module text loaded with require-from-string whose `handler()` returns the provider, and the type
 * token `pulumi-nodejs:dynamic/<module>:<type>`. These tests fail when the pinned SDK changes any
 * of it, and run the text the way the host does.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PROVIDER_KEY, providerMoved, providerPath, providerText } from "../src/providers/providerText";
import { STATE_VERSIONS, type StateKind } from "../src/providers/stateVersion";
import { REPO } from "./helpers/project";

const SDK = join(REPO, "node_modules", "@pulumi", "pulumi");
const sdkFile = (rel: string) => readFileSync(join(SDK, rel), "utf8");

describe("the dynamic provider host's contract (pinned @pulumi/pulumi)", () => {
  it("is the SDK version the project pins", () => {
    const pinned = (
      JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { dependencies: Record<string, string> }
    ).dependencies["@pulumi/pulumi"];
    expect((JSON.parse(sdkFile("package.json")) as { version: string }).version).toBe(pinned);
  });

  it("loads the provider from the __provider property with require-from-string and handler()", () => {
    const host = sdkFile("cmd/dynamic-provider/index.js");
    expect(host).toContain(`const providerKey = "${PROVIDER_KEY}";`);
    expect(host).toContain("const providerString = props[providerKey];");
    expect(host).toContain("requireFromString(providerString).handler()");
  });

  it("registers dynamic resources as pulumi-nodejs:dynamic/<module>:<type> with the text in __provider", () => {
    const dynamic = sdkFile("dynamic/index.js");
    expect(dynamic).toContain(
      'super(`pulumi-nodejs:dynamic${module ? `/${module}` : ""}:${type}`, name, props, opts);',
    );
    expect(dynamic).toContain("props[providerKey] = serializeProvider(provider);");
  });
});

describe("the provider text, run as the host runs it", () => {
  const dir = mkdtempSync(join(tmpdir(), "sm121-shim-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs `calls` against the provider of `text` in a fresh node whose working directory is `cwd`. */
  function host(cwd: string, text: string, calls: string): { status: number | null; stdout: string; stderr: string } {
    // The host's own loader: require-from-string as @pulumi/pulumi resolves it.
    const loader = JSON.stringify(require.resolve("require-from-string", { paths: [SDK] }));
    const load = `const p = require(${loader})(process.env.TEXT).handler();`;
    const r = spawnSync(
      process.execPath,
      [
        "-e",
        `(async () => { ${load} ${calls} })().catch((e) => { process.stderr.write(String(e.message)); ` +
          "process.exit(3); });",
      ],
      { cwd, env: { ...process.env, TEXT: text, NODE_COMPILE_CACHE: join(dir, "cc") }, encoding: "utf8" },
    );
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }

  it(
    "finds its implementation by the path inside the project, from a subdirectory too, " +
      "and passes every call through",
    () => {
      const project = join(dir, "project");
      mkdirSync(join(project, "dist", "src", "providers"), { recursive: true });
      mkdirSync(join(project, "sub"), { recursive: true });
      writeFileSync(
        join(project, providerPath("EngineDeployment")),
        [
          "exports.provider = {",
          "  check: async (o, n) => ({ inputs: { ...n, checked: true } }),",
          "  diff: async (id, o, n) => ({ changes: o.v !== n.v }),",
          "  create: async (i) => ({ id: 'made', outs: i }),",
          "  update: async (id, o, n) => ({ outs: n }),",
          "  delete: async () => { process.stdout.write('removed;'); },",
          "  read: async (id, props) => ({ id, props }),",
          "};",
          "",
        ].join("\n"),
      );
      const calls = [
        "const c = await p.check({}, { v: 1 });",
        "const d = await p.diff('x', { v: 1 }, { v: 2 });",
        "const m = await p.create({ v: 3 });",
        "await p.delete('x', {});",
        "const r = await p.read('x', { v: 4 });",
        "process.stdout.write(JSON.stringify({ c, d, m, r }));",
      ].join(" ");
      for (const cwd of [project, join(project, "sub")]) {
        const out = host(cwd, providerText("EngineDeployment"), calls);
        expect(out.stderr).toBe("");
        expect(out.status).toBe(0);
        expect(out.stdout).toBe(
          "removed;" +
            JSON.stringify({
              c: { inputs: { v: 1, checked: true } },
              d: { changes: true },
              m: { id: "made", outs: { v: 3 } },
              r: { id: "x", props: { v: 4 } },
            }),
        );
      }
    },
  );

  it("says what to run when the implementation is not built", () => {
    const out = host(dir, providerText("Surge"), "await p.diff('x', {}, {});");
    expect(out.status).toBe(3);
    expect(out.stderr).toContain(`${providerPath("Surge")} is not found from`);
    expect(out.stderr).toContain("npm run build");
  });

  it("names, for each kind, a built module whose provider object has every method the host calls", () => {
    for (const kind of Object.keys(STATE_VERSIONS) as StateKind[]) {
      const mod = require(join(REPO, providerPath(kind))) as { provider?: Record<string, unknown> };
      const missing = ["create", "delete", "diff", "update"].filter((m) => typeof mod.provider?.[m] !== "function");
      expect({ kind, missing }).toEqual({ kind, missing: [] });
      expect(providerText(kind)).toContain(JSON.stringify(providerPath(kind)));
    }
  });

  it("names no path of the machine that wrote it; a text of an earlier release is 'moved'", () => {
    const text = providerText("EngineDeployment");
    expect(text).not.toMatch(/\/(tmp|work|home|root)\//);
    expect(providerMoved({ __provider: "old" }, { __provider: text })).toBe(true);
    expect(providerMoved({ __provider: text }, { __provider: text })).toBe(false);
    expect(providerMoved({}, { __provider: text })).toBe(false);
  });
});

/**
 * Bytes from a node or an engine never steer the operator's terminal: a corpus of hostile bytes
 * (escape sequences, an OSC 52 clipboard write, CR, BEL, C1 controls, bidi overrides, NUL) goes
 * through the real output paths (a message's arguments in every language, the compiled CLI's
 * output against an engine that answers with them, the providers' progress lines) and comes out
 * with every control character made visible (src/text/visible).
 */
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCALES, msg, say } from "../../src/text/messages";
import { visible } from "../../src/text/visible";
import { sm121, type CliTarget } from "../cli-helpers";
import { testDir } from "../helpers/tmp";
import { REPO } from "../helpers/project";

/** Each payload and how it must read once shown. */
const CORPUS: Array<[string, string, string]> = [
  ["clear screen", "\u001b[2J\u001b[H", "\\u001B[2J\\u001B[H"],
  ["OSC 52 clipboard write", "\u001b]52;c;ZWNobyBwd25lZA==\u0007", "\\u001B]52;c;ZWNobyBwd25lZA==\\u0007"],
  ["carriage return over a line", "ok\rFAILED", "ok\\u000DFAILED"],
  ["bell", "ding\u0007", "ding\\u0007"],
  ["C1 CSI", "\u009b31mred", "\\u009B31mred"],
  ["bidi override", "abc\u202edcba", "abc\\u202Edcba"],
  ["bidi isolate", "\u2066x\u2069", "\\u2066x\\u2069"],
  ["zero-width space", "ad\u200bmin", "ad\\u200Bmin"],
  ["NUL and DEL", "a\u0000b\u007f", "a\\u0000b\\u007F"],
];

/** A terminal would act on any of these: none may be in what sm121 prints (tab and line feed aside). */
const acts = (text: string): boolean => /[\p{Cc}\p{Cf}\u2028\u2029]/u.test(text.replace(/[\t\n]/g, ""));

describe("visible", () => {
  it.each(CORPUS)("shows %s as escapes, and shows it the same when shown again", (_name, raw, shown) => {
    expect(visible(`model ${raw} end`)).toBe(`model ${shown} end`);
    expect(visible(visible(raw))).toBe(shown);
  });

  it("keeps tabs, line breaks where text has lines, and every printable character of every script", () => {
    expect(visible("a\tb\nc — ü 中文 ✓")).toBe("a\tb\nc — ü 中文 ✓");
    expect(visible("dir\nspark2: ok", { lines: false })).toBe("dir\\u000Aspark2: ok");
  });
});

describe("a message that carries a node's bytes", () => {
  it("shows them visible in every language: the preview's line about a directory on the node", () => {
    for (const [, raw, shown] of CORPUS) {
      const m = msg("serve.look.stopsFirst", { node: "spark1", other: `x${raw}`, deployment: "d" });
      for (const l of LOCALES) {
        const text = say(m, l);
        expect(acts(text), l).toBe(false);
        expect(text, l).toContain(`x${shown}`);
      }
    }
  });
});

describe("the CLI against an engine that answers with hostile bytes", () => {
  const all = CORPUS.map(([, raw]) => raw).join(" ");
  let server: Server;
  let url = "";

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/v1/models") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: `evil${all}` }] }));
      } else {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(`engine error ${all}`);
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("prints the model id and the error body with every control character visible", async () => {
    const dir = testDir("sm121-hostile-cli-");
    const e: CliTarget = { dir, stack: "none", site: { clientKey: join(dir, "no-key") } };
    const r = await sm121(e, ["bench", "--url", url, "--requests", "1"]);
    expect(r.code).toBe(1);
    expect(acts(r.stdout + r.stderr)).toBe(false);
    for (const [, , shown] of CORPUS) expect(r.stdout).toContain(shown);
    // --json: JSON's own escapes and sm121's read back the same; the document is still the same JSON.
    const j = await sm121(e, ["bench", "--url", url, "--requests", "1", "--json"]);
    expect(acts(j.stdout + j.stderr)).toBe(false);
    const parsed = JSON.parse(j.stdout) as { model: string; errorSamples: string[] };
    expect(parsed.model).toBe(`evil${all}`);
    expect(parsed.errorSamples[0]).toBe(`HTTP 500: engine error ${all}`);
  });
});

describe("a provider's progress line", () => {
  it("shows what a node printed with every control character visible", () => {
    const line = CORPUS.map(([, raw]) => raw).join(" ");
    const common = JSON.stringify(join(REPO, "dist", "src", "providers", "common.js"));
    const script = `require(${common}).providerLog("d")(${JSON.stringify(`spark1: ${line}`)})`;
    const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    expect(r.status, r.stderr).toBe(0);
    expect(acts(r.stderr)).toBe(false);
    expect(r.stderr).toBe(`sm121: d: spark1: ${CORPUS.map(([, , shown]) => shown).join(" ")}\n`);
  });
});

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
  ["clear screen", "\u001b[2J\u001b[H", "\\u001b[2J\\u001b[H"],
  ["OSC 52 clipboard write", "\u001b]52;c;ZWNobyBwd25lZA==\u0007", "\\u001b]52;c;ZWNobyBwd25lZA==\\u0007"],
  ["carriage return over a line", "ok\rFAILED", "ok\\rFAILED"],
  ["bell", "ding\u0007", "ding\\u0007"],
  ["C1 CSI", "\u009b31mred", "\\u009b31mred"],
  ["bidi override", "abc\u202edcba", "abc\\u202edcba"],
  ["bidi isolate", "\u2066x\u2069", "\\u2066x\\u2069"],
  ["NUL and DEL", "a\u0000b\u007f", "a\\u0000b\\u007f"],
];

/** A terminal would act on any of these: none may be in what sm121 prints (tab and line feed aside). */
const RAW = new RegExp(
  "[" +
    [
      [0x00, 0x08],
      [0x0b, 0x1f],
      [0x7f, 0x9f],
      [0x202a, 0x202e],
      [0x2066, 0x2069],
    ]
      .map(([a = 0, b = 0]) => `${String.fromCharCode(a)}-${String.fromCharCode(b)}`)
      .join("") +
    "\u061c\u200e\u200f\u2028\u2029]",
);

describe("visible", () => {
  it.each(CORPUS)("shows %s as escapes, and shows it the same when shown again", (_name, raw, shown) => {
    expect(visible(`model ${raw} end`)).toBe(`model ${shown} end`);
    expect(visible(visible(raw))).toBe(shown);
  });

  it("keeps tabs, line breaks where text has lines, and every printable character of every script", () => {
    expect(visible("a\tb\nc — ü 中文 ✓")).toBe("a\tb\nc — ü 中文 ✓");
    expect(visible("dir\nspark2: ok", { lines: false })).toBe("dir\\nspark2: ok");
  });
});

describe("a message that carries a node's bytes", () => {
  it("shows them visible in every language: the preview's line about a directory on the node", () => {
    for (const [, raw, shown] of CORPUS) {
      const m = msg("serve.look.stopsFirst", { node: "spark1", other: `x${raw}`, deployment: "d" });
      for (const l of LOCALES) {
        const text = say(m, l);
        expect(text, l).not.toMatch(RAW);
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
    for (const args of [
      ["--requests", "1"],
      ["--requests", "1", "--json"],
    ]) {
      const r = await sm121(e, ["bench", "--url", url, ...args]);
      expect(r.code).toBe(1);
      expect(r.stdout + r.stderr).not.toMatch(RAW);
      for (const [, , shown] of CORPUS) expect(r.stdout, args.join(" ")).toContain(shown);
    }
    // The --json output is still the same JSON: the escapes are JSON's own.
    const j = await sm121(e, ["bench", "--url", url, "--requests", "1", "--json"]);
    expect((JSON.parse(j.stdout) as { model: string }).model).toBe(`evil${all}`);
  });
});

describe("a provider's progress line", () => {
  it("shows what a node printed with every control character visible", () => {
    const line = CORPUS.map(([, raw]) => raw).join(" ");
    const script = `require(${JSON.stringify(join(REPO, "dist", "src", "providers", "common.js"))}).providerLog("d")(${JSON.stringify(`spark1: ${line}`)})`;
    const r = spawnSync(process.execPath, ["-e", script], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stderr).toBe(`sm121: d: spark1: ${CORPUS.map(([, , shown]) => shown).join(" ")}\n`);
  });
});

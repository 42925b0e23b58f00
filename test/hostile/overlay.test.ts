/**
 * Overlays: docker-args.txt words against every payload, and the hostile overlay directories of
 * corpus/project/overlays (shell, docker flags, NUL bytes, a secret, a mount of an owned path
 * spelled with .., a manifest that is not JSON), read from disk as `up` reads them.
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadOverlay, parseDockerArgs, parseOverlay } from "../../src/render/overlay";
import { CORPUS, PAYLOADS, rejected } from "./helpers";

const A = "ov/docker-args.txt";
const OV = join(CORPUS, "project", "overlays");
const WORD =
  "a word here may hold only letters, digits and _ . / : = , @ + % -, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
const PAIRS =
  "only -e NAME=VALUE and -v SRC:DST[:ro|rw] pairs are allowed, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script; remove it, " +
  "or set what it does through a -e or -v pair or a recipe key";
const MOUNT = "write -v /absolute/source:/absolute/target, optionally with :ro or :rw";

/** -v /srv/x<payload>:/x in docker-args.txt: every payload is refused. */
const IN_OVERLAY: Record<string, string[]> = {
  "command substitution": [`${A}:1:10: -v /srv/x$(id):/x contains \`$\`; ${WORD}`],
  backticks: [`${A}:1:10: -v /srv/x\`id\`:/x contains a backtick; ${WORD}`],
  "a semicolon": [`${A}:1:10: -v /srv/x;id:/x contains \`;\`; ${WORD}`],
  "&&": [`${A}:1:10: -v /srv/x&&id:/x contains \`&\`; ${WORD}`],
  "a pipe": [`${A}:1:10: -v /srv/x|id:/x contains \`|\`; ${WORD}`],
  "a newline": [
    `${A}:1:4: -v /srv/x is not SRC:DST[:ro|rw]; ${MOUNT}`,
    `${A}:2:1: \`id:/x\` is not part of a -e or -v pair: ${PAIRS}`,
  ],
  "a carriage return": [`${A}:1:10: -v /srv/x\\u000Did:/x contains a carriage return; ${WORD}`],
  NUL: [`${A}:1:10: -v /srv/x\\u0000id:/x contains control character U+0000; ${WORD}`],
  "a single quote": [`${A}:1:10: -v /srv/x'id:/x contains a single quote; ${WORD}`],
  "a double quote": [`${A}:1:10: -v /srv/x"id:/x contains a double quote; ${WORD}`],
  "${IFS}": [`${A}:1:10: -v /srv/x\${IFS}id:/x contains \`$\`; ${WORD}`],
  "a glob": [`${A}:1:10: -v /srv/x*:/x contains \`*\`; ${WORD}`],
  "a space": [
    `${A}:1:4: -v /srv/x is not SRC:DST[:ro|rw]; ${MOUNT}`,
    `${A}:1:11: \`id:/x\` is not part of a -e or -v pair: ${PAIRS}`,
  ],
  "an ESC sequence": [`${A}:1:10: -v /srv/x\\u001B[2Jid:/x contains control character U+001b; ${WORD}`],
  "a right-to-left override": [`${A}:1:10: -v /srv/x\\u202Eid:/x contains invisible format character U+202E; ${WORD}`],
};

describe("a docker-args.txt word refuses every payload", () => {
  it.each(PAYLOADS)("%s", (title, payload) => {
    expect(rejected(() => parseDockerArgs(A, `-v /srv/x${payload.slice(1)}:/x\n`), A)).toEqual(IN_OVERLAY[title]);
  });
});

describe("hostile overlay directories", () => {
  const file = (dir: string, name = "docker-args.txt") => join(OV, dir, name);
  it("injection: shell in -e and -v words", () => {
    const f = file("injection");
    expect(rejected(() => loadOverlay(join(OV, "injection")), f)).toEqual([
      `${f}:2:6: -e A=$(id) contains \`$\`; ${WORD}`,
      `${f}:3:13: -v /srv/x:/x;reboot contains \`;\`; ${WORD}`,
      `${f}:4:6: -e B=\`id\` contains a backtick; ${WORD}`,
    ]);
  });

  it("flags: docker flags that are not -e/-v pairs", () => {
    const f = file("flags");
    const not = (w: string, fix: string) =>
      `\`${w}\` is not part of a -e or -v pair: ${PAIRS.replace(/; remove it.*$/, "")}; ${fix}`;
    const other = "remove it, or set what it does through a -e or -v pair or a recipe key";
    expect(rejected(() => loadOverlay(join(OV, "flags")), f)).toEqual([
      `${f}:1:1: ${not("--privileged", other)}`,
      `${f}:2:1: ${not("--pid=host", other)}`,
      `${f}:3:14: ${not("--network=host", other)}`,
    ]);
  });

  it("nul: NUL and bytes that are not UTF-8", () => {
    const f = file("nul");
    expect(rejected(() => loadOverlay(join(OV, "nul")), f)).toEqual([
      `${f}:1:7: -e A=1\\u0000 contains control character U+0000; ${WORD}`,
      `${f}:2:6: -e B=\uFFFD\uFFFD contains \`\uFFFD\`; ${WORD}`,
    ]);
  });

  it("secret: an HF_TOKEN or API_KEY, refused without echoing it", () => {
    const f = file("secret");
    const r = rejected(() => loadOverlay(join(OV, "secret")), f);
    expect(r).toEqual([
      `${f}:1:4: -e HF_TOKEN puts a secret into EXTRA_DOCKER_ARGS; remove it; ` +
        `HF_TOKEN belongs in the node .env or a Pulumi secret`,
      `${f}:2:4: -e API_KEY puts a secret into EXTRA_DOCKER_ARGS; remove it; ` +
        `API_KEY belongs in the node .env or a Pulumi secret`,
    ]);
    expect(r.join("\n")).not.toMatch(/hf_abcdef|sk-secret/);
  });

  it("owned: a mount of start.sh's own path spelled with ..", () => {
    const f = file("owned");
    expect(rejected(() => loadOverlay(join(OV, "owned")), f)).toEqual([
      `${f}:1:4: -v /srv/mtp.py:/workspace/../workspace/mtp.py:ro has a ".." segment; ${MOUNT}, without ..`,
    ]);
  });

  it("bad-json: a manifest that is not JSON", () => {
    const f = file("bad-json", "manifest.json");
    expect(rejected(() => loadOverlay(join(OV, "bad-json")), f)).toEqual([
      `${f}:1:1: is not valid JSON (Unexpected token '}'); rebuild the overlay: the builder writes valid JSON`,
    ]);
  });

  it("a manifest nested 200,000 deep is read (no stack overflow); only its bytes count (the identity hash)", () => {
    const deep = Buffer.from(`${"[".repeat(200_000)}${"]".repeat(200_000)}`);
    const o = parseOverlay("/ov", Buffer.from("-e A=1\n"), deep);
    expect([o.dockerArgs.length, o.sha256]).toEqual([
      1,
      createHash("sha256").update("-e A=1\n").update(deep).digest("hex"),
    ]);
  });

  it("a directory that is a file, and a directory name with a newline", () => {
    const dir = join(CORPUS, "project", "recipes", "scripted.toml");
    expect(rejected(() => loadOverlay(dir))).toEqual([
      `${dir}/docker-args.txt:1:1: overlay: cannot read docker-args.txt (ENOTDIR); ` +
        `an overlay directory holds docker-args.txt and manifest.json; ` +
        `build it with the overlay builder (--out ${dir}) or give the right directory`,
      `${dir}/manifest.json:1:1: overlay: cannot read manifest.json (ENOTDIR); ` +
        `an overlay directory holds docker-args.txt and manifest.json; ` +
        `build it with the overlay builder (--out ${dir}) or give the right directory`,
    ]);
    expect(
      rejected(() => parseOverlay("/srv/ov\nx", Buffer.from("-e A=1\n"), Buffer.from("{}")), "/srv/ov\nx"),
    ).toEqual([
      "/srv/ov\\u000Ax:1:1: overlay: the directory name contains white space or a control character; " +
        "use a directory path without them: it goes into the .env header",
    ]);
  });

  it("crlf: a builder run on Windows is fine (the control case)", () => {
    expect(loadOverlay(join(OV, "crlf")).dockerArgs.map((p) => `${p.flag} ${p.value}`)).toEqual([
      "-e A=1",
      "-v /srv/x:/x:ro",
    ]);
  });
});

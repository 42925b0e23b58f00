import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { renderEnv, RenderEnvInput } from "../src/render/envfile";
import { loadOverlay, Overlay, overlaySha256, parseDockerArgs, parseOverlay } from "../src/render/overlay";
import { parseProfile, readProfileFile } from "../src/render/profile";
import { errorsOf as messages } from "./helpers/spec";
import { say } from "../src/text/messages";

const OVERLAYS = path.join(__dirname, "fixtures/overlays");
const MTP_R3 = path.join(OVERLAYS, "mtp-r3");
const F = "o/docker-args.txt";
const WHY =
  "only -e NAME=VALUE and -v SRC:DST[:ro|rw] pairs are allowed, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
const REMOVE = "remove it, or set what it does through a -e or -v pair or a recipe key";
const MOUNT_FIX = "write -v /absolute/source:/absolute/target, optionally with :ro or :rw";

function overlay(args: string, dir = "/srv/overlays/o1"): Overlay {
  return parseOverlay(dir, Buffer.from(args), Buffer.from("{}\n"));
}

function input(profileText: string, more: Partial<RenderEnvInput> = {}): RenderEnvInput {
  const profile = parseProfile("p.env", `# sm121-recipe: qwen38-flash\n${profileText}`);
  return { profile, node: "spark2", recipe: "qwen38-flash", nodeEnv: {}, vars: {}, recipeDir: "/r", ...more };
}

describe("parseDockerArgs", () => {
  it("reads pairs over several lines, skips comment lines, and keeps positions", () => {
    const text = "# built by build.sh\n-e A=1 -v\n\n   # a comment\n  /srv/a:/a:ro\n-v /b:/b -e B=\n";
    expect(parseDockerArgs(F, text).map((p) => [p.flag, p.value, p.line, p.col])).toEqual([
      ["-e", "A=1", 2, 1],
      ["-v", "/srv/a:/a:ro", 2, 8],
      ["-v", "/b:/b", 6, 1],
      ["-e", "B=", 6, 10],
    ]);
  });

  it("numbers lines from startLine and accepts CRLF", () => {
    expect(parseDockerArgs(F, "-e A=1\r\n-v /a:/b\r\n", 10).map((p) => [p.value, p.line])).toEqual([
      ["A=1", 10],
      ["/a:/b", 11],
    ]);
    expect(messages(() => parseDockerArgs(F, "\n--x", 10))).toEqual([
      `${F}:11:1: \`--x\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`,
    ]);
  });

  const cases: Array<[string, string, string[]]> = [
    [
      "a flag that is not -e or -v",
      "# c\n-v /a:/b --gpus all\n",
      [
        `${F}:2:10: \`--gpus\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`,
        `${F}:2:17: \`all\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`,
      ],
    ],
    [
      "an inline comment",
      "-v /a:/b # why\n",
      [
        `${F}:1:10: \`#\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`,
        `${F}:1:12: \`why\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`,
      ],
    ],
    [
      "--env long form",
      "--env=A=1\n",
      [
        `${F}:1:1: \`--env=A=1\` is not part of a -e or -v pair: ${WHY}; ` +
          "use the short form: -e NAME=VALUE or -v SRC:DST[:ro|rw]",
      ],
    ],
    [
      "-v glued",
      "-v/a:/b\n",
      [`${F}:1:1: \`-v/a:/b\` is not part of a -e or -v pair: ${WHY}; write -v and its value as two words`],
    ],
    [
      "a dangling -v at the end, after a comment",
      "-e A=1\n# end\n-v\n",
      [`${F}:3:1: -v has no value; write -v SRC:DST[:ro|rw]`],
    ],
    ["-e followed by -v", "-e -v /a:/b\n", [`${F}:1:1: -e has no value; write -e NAME=VALUE`]],
    [
      "-e without =",
      "-e A\n",
      [`${F}:1:4: -e A is not NAME=VALUE; write -e NAME=VALUE with a name of letters, digits and _`],
    ],
    ["-v with four parts", "-v /a:/b:ro:x\n", [`${F}:1:4: -v /a:/b:ro:x is not SRC:DST[:ro|rw]; ${MOUNT_FIX}`]],
    ["-v with an empty target", "-v /a:\n", [`${F}:1:4: -v /a: is not SRC:DST[:ro|rw]; ${MOUNT_FIX}`]],
    [
      "relative source",
      "-v shard:/models/x\n",
      [
        `${F}:1:4: -v shard:/models/x: source shard is not an absolute path; ${MOUNT_FIX}; ` +
          "the source is a path on the node",
      ],
    ],
    [
      "a placeholder (overlays have no variables)",
      "-v {{x}}:/y\n",
      [`${F}:1:4: -v {{x}}:/y: source {{x}} is not an absolute path; ${MOUNT_FIX}; the source is a path on the node`],
    ],
    [
      "a $ in a value",
      "-e A=$HOME\n",
      [
        `${F}:1:6: -e A=$HOME contains \`$\`; a word here may hold only letters, digits and _ . / : = , ` +
          "@ + % -, because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script",
      ],
    ],
    [
      "a glob in a path",
      "-v /a/*:/b\n",
      [
        `${F}:1:7: -v /a/*:/b contains \`*\`; a word here may hold only letters, digits and _ . / : = , ` +
          "@ + % -, because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script",
      ],
    ],
    [
      "a secret",
      "-e API_KEY=sk-secret123\n",
      [
        `${F}:1:4: -e API_KEY puts a secret into EXTRA_DOCKER_ARGS; remove it; ` +
          "API_KEY belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "a bare secret word",
      "HF_TOKEN=hf_secret123\n",
      [`${F}:1:1: \`HF_TOKEN=<redacted>\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`],
    ],
  ];
  it.each(cases)("%s", (_name, text, expected) => {
    const all = messages(() => parseDockerArgs(F, text));
    expect(all).toEqual(expected);
    expect(all.join("\n")).not.toMatch(/secret123/);
  });
});

describe("loadOverlay", () => {
  it("reads a multi-line docker-args.txt with comments and the manifest", () => {
    const o = loadOverlay(MTP_R3);
    const args = path.join(MTP_R3, "docker-args.txt");
    expect(o.dir).toBe(MTP_R3);
    expect(o.dockerArgs.map((p) => [p.flag, p.value, p.file, p.line, p.col])).toEqual([
      ["-e", "SM121_OVERLAY=mtp-r3", args, 4, 1],
      ["-v", "/srv/overlays/qwen38/mtp-r3/shard:/models/mtp-shard-r2:ro", args, 5, 1],
      ["-v", "/srv/overlays/qwen38/mtp-r3/mtp_patch.py:/opt/patches/mtp_patch.py:ro", args, 8, 1],
      ["-e", "VLLM_MTP_PATCH=/opt/patches/mtp_patch.py", args, 8, 74],
    ]);
    expect(o.manifest).toMatchObject({ builder: "overlays/qwen38/build.sh", set: ["mtp-r3"] });
  });

  it("hashes the bytes of docker-args.txt followed by the bytes of manifest.json", () => {
    const a = readFileSync(path.join(MTP_R3, "docker-args.txt"));
    const m = readFileSync(path.join(MTP_R3, "manifest.json"));
    const expected = createHash("sha256")
      .update(Buffer.concat([a, m]))
      .digest("hex");
    expect(loadOverlay(MTP_R3).sha256).toBe(expected);
    expect(overlaySha256(a, m)).toBe(expected);
    expect(parseOverlay("/d", a, Buffer.concat([m, Buffer.from(" ")])).sha256).not.toBe(expected);
    expect(parseOverlay("/d", Buffer.concat([a, Buffer.from("# c\n")]), m).sha256).not.toBe(expected);
  });

  it("names a missing manifest.json", () => {
    const dir = path.join(OVERLAYS, "no-manifest");
    expect(messages(() => loadOverlay(dir))).toEqual([
      `${dir}/manifest.json:1:1: overlay: the overlay has no manifest.json; ` +
        "an overlay directory holds docker-args.txt and manifest.json; " +
        `build it with the overlay builder (--out ${dir}) or give the right directory`,
    ]);
  });

  it("names both files when the directory does not exist", () => {
    const dir = path.join(OVERLAYS, "absent");
    expect(messages(() => loadOverlay(dir))).toEqual([
      `${dir}/docker-args.txt:1:1: overlay: the overlay has no docker-args.txt; ` +
        "an overlay directory holds docker-args.txt and manifest.json; " +
        `build it with the overlay builder (--out ${dir}) or give the right directory`,
      `${dir}/manifest.json:1:1: overlay: the overlay has no manifest.json; ` +
        "an overlay directory holds docker-args.txt and manifest.json; " +
        `build it with the overlay builder (--out ${dir}) or give the right directory`,
    ]);
  });

  it("rejects a manifest that is not JSON, without quoting it", () => {
    const dir = path.join(OVERLAYS, "bad-manifest");
    expect(messages(() => loadOverlay(dir))).toEqual([
      `${dir}/manifest.json:1:1: is not valid JSON (Unexpected token 'm'); ` +
        "rebuild the overlay: the builder writes valid JSON",
    ]);
    expect(messages(() => parseOverlay("/d", Buffer.from(""), Buffer.from('{\n  "a": 1,\n}')))).toEqual([
      "/d/manifest.json:3:1: is not valid JSON (Expected double-quoted property name in JSON at position 12 " +
        "(line 3 column 1)); rebuild the overlay: the builder writes valid JSON",
    ]);
  });

  it("collects docker-args errors and manifest errors together", () => {
    expect(messages(() => parseOverlay("/d", Buffer.from("-x\n"), Buffer.from("")))).toEqual([
      `/d/docker-args.txt:1:1: \`-x\` is not part of a -e or -v pair: ${WHY}; ${REMOVE}`,
      "/d/manifest.json:1:1: is not valid JSON (Unexpected end of JSON input); " +
        "rebuild the overlay: the builder writes valid JSON",
    ]);
  });

  it("rejects a directory name that cannot go into the header line", () => {
    expect(messages(() => parseOverlay("/srv/my overlay", Buffer.from(""), Buffer.from("{}")))).toEqual([
      "/srv/my overlay:1:1: overlay: the directory name contains white space or a control character; " +
        "use a directory path without them: it goes into the .env header",
    ]);
  });
});

describe("overlay conflicts in renderEnv", () => {
  const O = "/srv/overlays/o1/docker-args.txt";
  const PROFILE = 'EXTRA_DOCKER_ARGS="-e A=1 -v /a:/x"\n';

  it("is an error when an overlay mounts a path that the profile mounts", () => {
    expect(messages(() => renderEnv(input(PROFILE, { overlay: overlay("-v /b:/x/:ro\n") })))).toEqual([
      `${O}:1:1: -v /b:/x/:ro mounts /x, which the profile also mounts (-v /a:/x, p.env:2:27); ` +
        "remove one of the two mounts, or let the overlay replace the profile mount (--overlay-wins)",
    ]);
  });

  it("replaces the profile mount with overlayWins and tells the plan", () => {
    const r = renderEnv(input(PROFILE, { overlay: overlay("-v /b:/x/:ro\n"), overlayWins: true }));
    expect(r.keys.EXTRA_DOCKER_ARGS).toBe("-e A=1 -v /b:/x/:ro");
    expect(r.replacements.map((m) => say(m, "en"))).toEqual(["overlay replaces -v /a:/x (profile) with -v /b:/x/:ro"]);
    // Said where it is printed, in the reader's language (the bundle keeps the English words: render/deployment).
    expect(r.replacements.map((m) => say(m, "ru"))).toEqual(["оверлей заменяет -v /a:/x (из профиля) на -v /b:/x/:ro"]);
    expect(r.replacements.map((m) => say(m, "ja"))).toEqual([
      "オーバーレイがプロファイルの -v /a:/x を -v /b:/x/:ro に置き換えます",
    ]);
  });

  it("is an error when both set the same -e name, and the overlay wins only with overlayWins", () => {
    expect(messages(() => renderEnv(input(PROFILE, { overlay: overlay("-e B=2\n-e A=2\n") })))).toEqual([
      `${O}:2:1: -e A=2 sets A, which the profile also sets (-e A=1, p.env:2:20); ` +
        "remove one of the two, or let the overlay replace the profile value (--overlay-wins)",
    ]);
    const r = renderEnv(input(PROFILE, { overlay: overlay("-e B=2\n-e A=2\n"), overlayWins: true }));
    expect(r.keys.EXTRA_DOCKER_ARGS).toBe("-v /a:/x -e B=2 -e A=2");
    expect(r.replacements.map((m) => say(m, "en"))).toEqual(["overlay replaces -e A=1 (profile) with -e A=2"]);
  });

  it("always rejects a mount on a path that start.sh owns, also with overlayWins", () => {
    for (const overlayWins of [false, true]) {
      const given = input(PROFILE, {
        overlay: overlay("-e B=2 -v /srv/mtp.py:/opt/vllm/mtp.py:ro\n"),
        overlayWins,
        ownedMounts: ["/opt/vllm/mtp.py/"],
      });
      expect(messages(() => renderEnv(given))).toEqual([
        `${O}:1:8: -v /srv/mtp.py:/opt/vllm/mtp.py:ro mounts /opt/vllm/mtp.py, which start.sh mounts itself; ` +
          "remove this mount; start.sh owns /opt/vllm/mtp.py",
      ]);
    }
  });

  it("rejects the same path or name twice within the overlay", () => {
    expect(
      messages(() => renderEnv(input("A=1\n", { overlay: overlay("-v /a:/y\n-v /b:/y\n-e C=1 -e C=2\n") }))),
    ).toEqual([
      `${O}:2:1: -v /b:/y mounts /y a second time in the overlay (first on line 1); keep one of them`,
      `${O}:3:8: -e C=2 sets C a second time in the overlay (first on line 3); keep one of them`,
    ]);
  });

  it("replaces the r2 shard of the best profile with the r3 overlay fixture", () => {
    const profile = readProfileFile(path.join(__dirname, "fixtures/profiles/qwen38/best.env"));
    const given: RenderEnvInput = {
      profile,
      node: "spark2",
      recipe: "qwen38-flash",
      nodeEnv: { PORT: "8000" },
      vars: { tritonCache: "/c/triton", mtpShardR2: "/m/r2" },
      recipeDir: "/r",
      overlay: loadOverlay(MTP_R3),
    };
    const args = path.join(MTP_R3, "docker-args.txt");
    expect(messages(() => renderEnv(given))).toEqual([
      `${args}:5:1: -v /srv/overlays/qwen38/mtp-r3/shard:/models/mtp-shard-r2:ro mounts /models/mtp-shard-r2, ` +
        `which the profile also mounts (-v /m/r2:/models/mtp-shard-r2:ro, ${profile.file}:38:3); ` +
        "remove one of the two mounts, or let the overlay replace the profile mount (--overlay-wins)",
    ]);
    const r = renderEnv({ ...given, overlayWins: true });
    expect(r.replacements.map((m) => say(m, "en"))).toEqual([
      "overlay replaces -v /m/r2:/models/mtp-shard-r2:ro (profile) with " +
        "-v /srv/overlays/qwen38/mtp-r3/shard:/models/mtp-shard-r2:ro",
    ]);
    expect(r.keys.EXTRA_DOCKER_ARGS).toBe(
      "-e VLLM_USE_V2_MODEL_RUNNER=1 -e TRITON_CACHE_DIR=/triton-cache -v /c/triton:/triton-cache " +
        "-v /r/files/patches/block_drop.py:/opt/patches/block_drop.py:ro -e SM121_OVERLAY=mtp-r3 " +
        "-v /srv/overlays/qwen38/mtp-r3/shard:/models/mtp-shard-r2:ro " +
        "-v /srv/overlays/qwen38/mtp-r3/mtp_patch.py:/opt/patches/mtp_patch.py:ro " +
        "-e VLLM_MTP_PATCH=/opt/patches/mtp_patch.py",
    );
    expect(r.overlayLine).toBe(`${MTP_R3} overlay-sha256=${loadOverlay(MTP_R3).sha256}`);
  });
});

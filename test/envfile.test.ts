import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import {
  diffKeys,
  envIdentityOf,
  fillRenderedAt,
  parseEnvFile,
  type ParsedEnvFile,
  RENDERED_AT_SLOT,
  renderEnv,
  RenderEnvInput,
} from "../src/render/envfile";
import { sha256 } from "../src/render/identity";
import { parseOverlay } from "../src/render/overlay";
import { parseProfile, readProfileFile } from "../src/render/profile";
import { errorsOf as messages } from "./helpers/spec";

/** The formula of renderEnv's identity, applied to a file read back: body sha256, profile, overlay line. */
const identityOf = (p: ParsedEnvFile) => envIdentityOf(p.bodySha256, p.header.profile ?? "", p.header.overlay ?? "");

const FIXTURES = path.join(__dirname, "fixtures/profiles");
const R = "# sm121-recipe: qwen38-flash\n";
const NODE_ENV = { HF_HOME: "/srv/hf", BIND: "127.0.0.1", PORT: "8000", REQUIRE_IDLE_GPU: "1" };
const VARS = {
  tritonCache: "/home/ops/.cache/triton/qwen38",
  mtpShardR2: "/srv/models/qwen38/mtp-shard-r2",
  captureDir: "/srv/captures/qwen38",
};
const RECIPE_DIR = "/home/ops/spark-tuning/qwen38-flash";
const SOURCE = "the site (nodes.spark2.vars or the recipe's vars)";

function best(): RenderEnvInput {
  const profile = readProfileFile(path.join(FIXTURES, "qwen38/best.env"), "recipes/qwen38-flash/profiles/best.env");
  return {
    profile,
    node: "spark2",
    recipe: "qwen38-flash",
    nodeEnv: { ...NODE_ENV },
    vars: { ...VARS },
    recipeDir: RECIPE_DIR,
  };
}

function input(text: string, more: Partial<RenderEnvInput> = {}): RenderEnvInput {
  const profile = parseProfile("p.env", R + text);
  return {
    profile,
    node: "spark2",
    recipe: "qwen38-flash",
    nodeEnv: { ...NODE_ENV },
    vars: { ...VARS },
    recipeDir: RECIPE_DIR,
    ...more,
  };
}

function overlay(args: string, manifest = '{"set":["a"]}\n', dir = "/srv/overlays/o1") {
  return parseOverlay(dir, Buffer.from(args), Buffer.from(manifest));
}

describe("renderEnv: the golden best profile on spark2", () => {
  it("matches best.spark2.env.golden byte for byte", () => {
    const golden = readFileSync(path.join(FIXTURES, "best.spark2.env.golden"), "utf8");
    const r = renderEnv(best());
    expect(r.text).toBe(golden);
    expect(sha256(r.text)).toBe(sha256(golden));
  });

  it("has the header in the order of seed 001 and a body sha256 over the assignment lines", () => {
    const r = renderEnv(best());
    const lines = r.text.split("\n");
    expect(lines.slice(0, 6)).toEqual([
      "# sm121-profile: best",
      "# sm121-node: spark2",
      "# sm121-recipe: qwen38-flash",
      "# sm121-overlay: none",
      `# sm121-rendered: ${RENDERED_AT_SLOT}`,
      `# sm121-sha256: ${r.bodySha256}`,
    ]);
    expect(r.text.endsWith("\n")).toBe(true);
    expect(r.text).toBe(lines.slice(0, 6).join("\n") + "\n" + r.body);
    expect(r.bodySha256).toBe(sha256(r.body));
    expect(
      r.body
        .split("\n")
        .filter((l) => l !== "")
        .every((l) => /^[A-Z_][A-Z0-9_]*="[^"$`\\]*"$/.test(l)),
    ).toBe(true);
    expect(r.overlayLine).toBe("none");
    expect(r.identity).toBe(sha256(`${r.bodySha256}\nbest\nnone`));
  });

  it("substitutes vars in mkdirs, keeps the proofs, and puts the node keys last", () => {
    const r = renderEnv(best());
    expect(r.mkdirs).toEqual(["/home/ops/.cache/triton/qwen38"]);
    expect(r.proofs).toEqual(["MTP draft head: FP8 rowwise copy engaged", "block-drop backport: active"]);
    expect(Object.keys(r.keys).slice(-5)).toEqual(["EXTRA_DOCKER_ARGS", "HF_HOME", "BIND", "PORT", "REQUIRE_IDLE_GPU"]);
    expect(r.keys.EXTRA_DOCKER_ARGS).toBe(
      "-e VLLM_USE_V2_MODEL_RUNNER=1 -e TRITON_CACHE_DIR=/triton-cache " +
        "-v /home/ops/.cache/triton/qwen38:/triton-cache " +
        "-v /srv/models/qwen38/mtp-shard-r2:/models/mtp-shard-r2:ro " +
        "-v /home/ops/spark-tuning/qwen38-flash/files/patches/block_drop.py:/opt/patches/block_drop.py:ro",
    );
    expect(r.replacements).toEqual([]);
  });

  it("renders the other shipped profiles too", () => {
    for (const name of ["datagen", "capture", "tp2"]) {
      const profile = readProfileFile(path.join(FIXTURES, `qwen38/${name}.env`));
      const r = renderEnv({ ...best(), profile });
      expect(r.text.startsWith(`# sm121-profile: ${name}\n`)).toBe(true);
      expect(parseEnvFile(r.text).keys).toEqual(r.keys);
    }
  });
});

describe("renderEnv: body rules", () => {
  it("writes profile keys in file order, then the node keys in NODE_ENV_KEYS order, only those present", () => {
    const r = renderEnv(input('Z=1\nA="two words"\n', { nodeEnv: { PORT: "8001", HF_HOME: "/hf" } }));
    expect(r.body).toBe('Z="1"\nA="two words"\nHF_HOME="/hf"\nPORT="8001"\n');
  });

  it("joins a multi-line value with single spaces", () => {
    const r = renderEnv(input('EXTRA_VLLM_ARGS="\n  --a   1\n\t--b\n"\n', { nodeEnv: {} }));
    expect(r.body).toBe('EXTRA_VLLM_ARGS="--a 1 --b"\n');
  });

  it("substitutes {{vars}} in quoted and unquoted values; {{recipeDir}} always wins", () => {
    const r = renderEnv(
      input('A={{tritonCache}}/x\nB="{{recipeDir}} and {{captureDir}}"\n', {
        nodeEnv: {},
        vars: { ...VARS, recipeDir: "/other" },
      }),
    );
    expect(r.body).toBe(`A="${VARS.tritonCache}/x"\nB="${RECIPE_DIR} and ${VARS.captureDir}"\n`);
  });

  it("keeps an empty EXTRA_DOCKER_ARGS and leaves it out when neither profile nor overlay has one", () => {
    expect(renderEnv(input('EXTRA_DOCKER_ARGS=""\n', { nodeEnv: {} })).body).toBe('EXTRA_DOCKER_ARGS=""\n');
    expect(renderEnv(input("A=1\n", { nodeEnv: {} })).body).toBe('A="1"\n');
  });

  it("appends overlay pairs to EXTRA_DOCKER_ARGS, creating it after the profile keys when absent", () => {
    const o = overlay("-e B=2 -v /srv/o:/o:ro\n");
    const with_ = renderEnv(input('EXTRA_DOCKER_ARGS="-e A=1"\nX=1\n', { nodeEnv: { PORT: "1" }, overlay: o }));
    expect(with_.body).toBe('EXTRA_DOCKER_ARGS="-e A=1 -e B=2 -v /srv/o:/o:ro"\nX="1"\nPORT="1"\n');
    const without = renderEnv(input("X=1\n", { nodeEnv: { PORT: "1" }, overlay: o }));
    expect(without.body).toBe('X="1"\nEXTRA_DOCKER_ARGS="-e B=2 -v /srv/o:/o:ro"\nPORT="1"\n');
    expect(without.overlayLine).toBe(`/srv/overlays/o1 overlay-sha256=${o.sha256}`);
    expect(without.text).toContain(`\n# sm121-overlay: /srv/overlays/o1 overlay-sha256=${o.sha256}\n`);
  });
});

describe("renderEnv: invalid inputs, one exact message each", () => {
  const cases: Array<[string, RenderEnvInput, string[]]> = [
    [
      "unknown variable",
      input('EXTRA_DOCKER_ARGS="-v {{nope}}:/x"\n'),
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: unknown variable {{nope}}; " +
          "the known variables are {{captureDir}}, {{mtpShardR2}}, {{recipeDir}}, {{tritonCache}}; " +
          `or define nope in ${SOURCE}`,
      ],
    ],
    [
      "a var with $ in a quoted value",
      input('A="x {{bad}}"\n', { vars: { bad: "a$b" } }),
      [
        "p.env:2:6: A: {{bad}} expands to a value that contains `$`; " +
          "a profile value must not contain $, a backtick, a backslash or a double quote: " +
          `write the literal value, nothing expands it; change the variable bad in ${SOURCE}`,
      ],
    ],
    [
      "a var with a space in a docker word",
      input('EXTRA_DOCKER_ARGS="-v {{sp}}:/x"\n', { vars: { sp: "/a b" } }),
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: {{sp}} expands to a value that contains a space outside double quotes; " +
          "in this place a value may hold only letters, digits and _ . / : = , @ + % -; " +
          `change the variable sp in ${SOURCE}`,
      ],
    ],
    [
      "a var that makes a mount source relative",
      input('EXTRA_DOCKER_ARGS="-v {{rel}}:/x"\n', { vars: { rel: "cache" } }),
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -v cache:/x: source cache is not an absolute path " +
          "(after substituting {{rel}}); write -v /absolute/source:/absolute/target, optionally with :ro or :rw; " +
          "the source is a path on the node",
      ],
    ],
    [
      "a var with a colon",
      input('EXTRA_DOCKER_ARGS="-v {{two}}:/x"\n', { vars: { two: "/a:/b" } }),
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -v /a:/b:/x has mode `/x` (after substituting {{two}}); " +
          "use :ro or :rw, or no mode",
      ],
    ],
    [
      "--api-key through a var",
      input('EXTRA_VLLM_ARGS="--enforce-eager {{k}}"\n', { vars: { k: "--api-key=sk-secret123" } }),
      [
        "p.env:2:34: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS " +
          "(after substituting variables); put the key in the node .env as API_KEY; " +
          "start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "a mkdir var that is not absolute",
      input("# sm121-mkdir: {{rel}}\n", { vars: { rel: "cache" } }),
      [
        "p.env:2:16: directive sm121-mkdir: cache (after substituting {{rel}}) is not an absolute path; " +
          `give the variable an absolute path in ${SOURCE}`,
      ],
    ],
    [
      "an unknown var in a mkdir",
      input("# pulse-mkdir: {{nope}}/x\n", { vars: {} }),
      [
        "p.env:2:16: directive pulse-mkdir: unknown variable {{nope}}; the known variables are {{recipeDir}}; " +
          `or define nope in ${SOURCE}`,
      ],
    ],
    [
      "recipe mismatch",
      input("A=1\n", { recipe: "qwen38-dual" }),
      [
        "p.env:1:17: directive sm121-recipe: the profile is for recipe qwen38-flash, " +
          "but node spark2 runs recipe qwen38-dual; deploy profile p with recipe qwen38-flash, " +
          "or choose a profile of qwen38-dual",
      ],
    ],
    [
      "a node env key that is not a node key (a secret: no value shown)",
      input("A=1\n", { nodeEnv: { ...NODE_ENV, API_KEY: "sk-secret123" } }),
      [
        "site:1:1: nodes.spark2.env.API_KEY: is not a node key; " +
          "the node env holds only HF_HOME, BIND, PORT, REQUIRE_IDLE_GPU",
      ],
    ],
    [
      "a node env value with a double quote",
      input("A=1\n", { nodeEnv: { BIND: '127.0.0.1"' }, siteFile: "Pulumi.dev.yaml" }),
      [
        "Pulumi.dev.yaml:1:1: nodes.spark2.env.BIND: the value contains a double quote; " +
          "a profile value must not contain $, a backtick, a backslash or a double quote: " +
          "write the literal value, nothing expands it",
      ],
    ],
    [
      "a bad node name",
      input("A=1\n", { node: "spark 2" }),
      ["site:1:1: node: `spark 2` is not a node name; use letters, digits, . _ and -"],
    ],
    [
      "a profile mount on a path that start.sh owns",
      input('EXTRA_DOCKER_ARGS="-v /a:/opt/mtp.py:ro"\n', { ownedMounts: ["/opt/mtp.py"] }),
      [
        "p.env:2:20: EXTRA_DOCKER_ARGS: -v /a:/opt/mtp.py:ro mounts /opt/mtp.py, which start.sh mounts itself; " +
          "remove this mount; start.sh owns /opt/mtp.py",
      ],
    ],
    [
      "the same container path twice in a profile",
      input('EXTRA_DOCKER_ARGS="-v /a:/x -v /b:/x/"\n'),
      [
        "p.env:2:29: EXTRA_DOCKER_ARGS: -v /b:/x/ mounts /x a second time in the profile (first on line 2); " +
          "keep one of them",
      ],
    ],
  ];
  it.each(cases)("%s", (_name, given, expected) => {
    const all = messages(() => renderEnv(given));
    expect(all).toEqual(expected);
    expect(all.join("\n")).not.toMatch(/secret123/);
  });
});

describe("identity", () => {
  it("is the same for the same inputs, and the render is byte-stable", () => {
    const a = renderEnv(best());
    const b = renderEnv(best());
    expect(b.identity).toBe(a.identity);
    expect(b.text).toBe(a.text);
  });

  it("changes with one value", () => {
    const a = renderEnv(best());
    const b = renderEnv({ ...best(), vars: { ...VARS, tritonCache: "/home/ops/.cache/triton/qwen38b" } });
    const c = renderEnv({ ...best(), nodeEnv: { ...NODE_ENV, PORT: "8001" } });
    expect(b.identity).not.toBe(a.identity);
    expect(b.bodySha256).not.toBe(a.bodySha256);
    expect(c.identity).not.toBe(a.identity);
  });

  it("changes with the profile name alone", () => {
    const text = readFileSync(path.join(FIXTURES, "qwen38/best.env"), "utf8");
    const a = renderEnv({ ...best(), profile: parseProfile("best.env", text) });
    const b = renderEnv({ ...best(), profile: parseProfile("best2.env", text) });
    expect(b.bodySha256).toBe(a.bodySha256);
    expect(b.identity).not.toBe(a.identity);
  });

  it("changes with the overlay bytes, also when only manifest.json changes", () => {
    const none = renderEnv(best());
    const o1 = renderEnv({ ...best(), overlay: overlay("-e A=1\n") });
    const o2 = renderEnv({ ...best(), overlay: overlay("-e A=1\n", '{"set":["b"]}\n') });
    const o3 = renderEnv({ ...best(), overlay: overlay("# rebuilt\n-e A=1\n") });
    expect(o2.bodySha256).toBe(o1.bodySha256);
    expect(o3.bodySha256).toBe(o1.bodySha256);
    expect(new Set([none.identity, o1.identity, o2.identity, o3.identity]).size).toBe(4);
  });

  it("does not change when the node fills the rendered-at slot", () => {
    const r = renderEnv(best());
    const written = fillRenderedAt(r.text, "2026-09-23T10:15:00Z");
    expect(written).toContain("\n# sm121-rendered: 2026-09-23T10:15:00Z\n");
    expect(written).not.toContain(RENDERED_AT_SLOT);
    const parsed = parseEnvFile(written);
    expect(parsed.header.rendered).toBe("2026-09-23T10:15:00Z");
    expect(identityOf(parsed)).toBe(r.identity);
  });
});

describe("parseEnvFile", () => {
  it("round-trips a render: keys, body sha256 and identity", () => {
    for (const given of [best(), { ...best(), overlay: overlay("-e A=1 -v /srv/x:/x:ro\n") }]) {
      const r = renderEnv(given);
      const p = parseEnvFile(r.text);
      expect(p.keys).toEqual(r.keys);
      expect(p.body).toBe(r.body);
      expect(p.bodySha256).toBe(r.bodySha256);
      expect(identityOf(p)).toBe(r.identity);
      expect(p.header).toMatchObject({
        profile: "best",
        node: "spark2",
        recipe: "qwen38-flash",
        overlay: r.overlayLine,
        sha256: r.bodySha256,
      });
      expect(p.edited).toBe(false);
      expect(p.secretLines).toEqual([]);
      expect(p.problems).toEqual([]);
    }
  });

  it("keeps the secret lines apart, verbatim, and out of keys, body and identity", () => {
    const r = renderEnv(best());
    const p = parseEnvFile(`${r.text}HF_TOKEN=hf_secret123\nexport API_KEY="sk-secret123"\n`);
    expect(p.secretLines).toEqual(["HF_TOKEN=hf_secret123", 'export API_KEY="sk-secret123"']);
    expect(p.keys).toEqual(r.keys);
    expect(p.bodySha256).toBe(r.bodySha256);
    expect(identityOf(p)).toBe(r.identity);
    expect(JSON.stringify({ ...p, secretLines: [] })).not.toMatch(/secret123/);
  });

  it("reads a hand-edited file the way bash would", () => {
    const text = [
      "# a comment",
      "",
      "export A=1",
      "B='single quoted $HOME'",
      'C="a \\"q\\" \\$x \\\\ \\n"',
      "D=plain   # trailing comment",
      'E="two',
      'lines"',
      "F=a\\ b",
      "G=x'y'\"z\"",
      "not an assignment",
      "H=1 extra",
      "  I=indented",
      "",
    ].join("\n");
    const p = parseEnvFile(text);
    expect(p.keys).toEqual({
      A: "1",
      B: "single quoted $HOME",
      C: 'a "q" $x \\ \\n',
      D: "plain",
      E: "two\nlines",
      F: "a b",
      G: "xyz",
      H: "1",
      I: "indented",
    });
    expect(p.problems).toEqual([
      "line 11: not KEY=value, a comment or a blank line; ignored",
      "line 12: text after the value of H; ignored",
    ]);
    expect(p.body).toBe(
      [
        "export A=1",
        "B='single quoted $HOME'",
        'C="a \\"q\\" \\$x \\\\ \\n"',
        "D=plain   # trailing comment",
        'E="two\nlines"',
        "F=a\\ b",
        "G=x'y'\"z\"",
        "H=1 extra",
        "  I=indented",
        "",
      ].join("\n"),
    );
    expect(p.header).toEqual({});
    expect(p.edited).toBe(true);
  });

  it("reads CRLF files and reports an unterminated quote", () => {
    const p = parseEnvFile('A=1\r\nB="open\r\n');
    expect(p.keys).toEqual({ A: "1", B: "open\n" });
    expect(p.problems).toEqual(["line 2: the value of B has no closing quote"]);
  });

  it("finds an edit after the render: the identity changes and edited is set", () => {
    const r = renderEnv(best());
    const p = parseEnvFile(r.text.replace('MAX_NUM_SEQS="4"', 'MAX_NUM_SEQS="6"'));
    expect(p.header.sha256).toBe(r.bodySha256);
    expect(p.edited).toBe(true);
    expect(identityOf(p)).not.toBe(r.identity);
    expect(diffKeys(p.keys, r.keys)).toEqual({ added: [], removed: [], changed: ["MAX_NUM_SEQS"] });
  });

  it("reads the header of an older pulse render", () => {
    const p = parseEnvFile(
      '# pulse-profile: best\n# pulse-node: spark1\n# pulse-overlay: none\n# pulse-sha256: abc\nA="1"\n',
    );
    expect(p.header).toEqual({ profile: "best", node: "spark1", overlay: "none", sha256: "abc" });
    expect(identityOf(p)).toBe(sha256(`${sha256('A="1"\n')}\nbest\nnone`));
  });
});

describe("diffKeys", () => {
  it("lists sorted key names only and leaves the secrets out", () => {
    const before = { B: "1", A: "1", Z: "1", HF_TOKEN: "hf_secret123", API_KEY: "x" };
    const after = { A: "2", C: "1", B: "1", Y: "1", API_KEY: "y" };
    const d = diffKeys(before, after);
    expect(d).toEqual({ added: ["C", "Y"], removed: ["Z"], changed: ["A"] });
    expect(JSON.stringify(d)).not.toMatch(/HF_TOKEN|API_KEY|secret/);
  });

  it("is empty for equal maps", () => {
    expect(diffKeys({ A: "1" }, { A: "1" })).toEqual({ added: [], removed: [], changed: [] });
  });
});

describe("the node's fabric in a script recipe's .env", () => {
  const fabric = { NCCL_SOCKET_IFNAME: "enp1s0f1np1", NCCL_IB_HCA: "rocep1s0f1:1", VLLM_HOST_IP: "192.0.2.31" };

  it("adds -e pairs after the profile's, and makes EXTRA_DOCKER_ARGS when the profile has none", () => {
    const r = renderEnv(input("MAX_NUM_SEQS=4\n", { fabricEnv: fabric }));
    expect(r.keys["EXTRA_DOCKER_ARGS"]).toBe(
      "-e NCCL_SOCKET_IFNAME=enp1s0f1np1 -e NCCL_IB_HCA=rocep1s0f1:1 -e VLLM_HOST_IP=192.0.2.31",
    );
    expect(r.fabricOwn).toEqual([]);
    expect(renderEnv(input("MAX_NUM_SEQS=4\n")).keys["EXTRA_DOCKER_ARGS"]).toBeUndefined();
  });

  it("keeps a variable the profile sets itself, and names it", () => {
    const r = renderEnv(input('EXTRA_DOCKER_ARGS="-e NCCL_SOCKET_IFNAME=enp1s0f0np0"\n', { fabricEnv: fabric }));
    expect(r.keys["EXTRA_DOCKER_ARGS"]).toBe(
      "-e NCCL_SOCKET_IFNAME=enp1s0f0np0 -e NCCL_IB_HCA=rocep1s0f1:1 -e VLLM_HOST_IP=192.0.2.31",
    );
    expect(r.fabricOwn).toEqual(["NCCL_SOCKET_IFNAME"]);
  });
});

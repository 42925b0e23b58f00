/**
 * Which option table a recipe's args are checked against: the recipe's engine_version, else the
 * version its image carries (NGC's by the release notes, upstream tags by the version they name),
 * else the newest, with a warning; a version without a table uses the nearest, with a warning.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { said } from "./helpers/said";
import { imageVersion, KNOWN_IMAGES, nearestTable, tableFor } from "../src/engines/options/versions";
import { ENGINE_TABLES } from "../src/engines/options/table";
import { parseRecipe } from "../src/engines/recipes";

describe("the tables", () => {
  it("are one file per version, oldest first, each saying its own version", () => {
    const files = readdirSync(join(__dirname, "..", "src", "engines", "options")).filter((f) => f.endsWith(".json"));
    for (const [engine, tables] of Object.entries(ENGINE_TABLES)) {
      expect(tables.map((t) => `${engine}-${t.version}.json`).sort()).toEqual(
        files.filter((f) => f.startsWith(`${engine}-`)).sort(),
      );
      const order = tables.map((t) => t.version.split(".").map(Number));
      expect(
        [...order].sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0) || (a[1] ?? 0) - (b[1] ?? 0) || (a[2] ?? 0) - (b[2] ?? 0)),
      ).toEqual(order);
    }
  });

  it("exist for every version a known image carries", () => {
    for (const k of KNOWN_IMAGES)
      expect(
        ENGINE_TABLES[k.engine].map((t) => t.version),
        k.image,
      ).toContain(k.version);
  });
});

describe("the version of an image", () => {
  it("NGC's by the release notes, upstream's by the tag", () => {
    expect(imageVersion("nvcr.io/nvidia/vllm:26.01-py3")).toMatchObject({ engine: "vllm", version: "0.11.1" });
    expect(imageVersion("vllm/vllm-openai:v0.33.0")).toMatchObject({ engine: "vllm", version: "0.33.0" });
    expect(imageVersion("lmsysorg/sglang:v0.5.23-cu130")).toMatchObject({ engine: "sglang", version: "0.5.23" });
    expect(imageVersion("vllm/vllm-openai:latest")).toBeUndefined();
    expect(imageVersion("nvcr.io/nvidia/vllm:27.01-py3")).toBeUndefined();
  });
});

describe("the table a recipe is checked against", () => {
  it("its engine_version, then its image, and the plan says which", () => {
    expect(tableFor("vllm", { engineVersion: "0.10.2", image: "vllm/vllm-openai:v0.33.0", file: "r.toml" })?.said).toBe(
      "vllm serve 0.10.2 (engine_version in r.toml)",
    );
    expect(tableFor("vllm", { image: "nvcr.io/nvidia/vllm:25.10-py3", file: "r.toml" })).toMatchObject({
      said: "vllm serve 0.10.2 (nvcr.io/nvidia/vllm:25.10-py3: NGC vLLM release 25.10)",
    });
    expect(tableFor("gr8", { image: "ghcr.io/kindlingai/gr8:0.9.2", file: "r.toml" })).toBeUndefined();
  });

  it("an unknown image: the newest table, with a warning that says how to name the version", () => {
    const c = tableFor("vllm", { image: "vllm/vllm-openai:latest", file: "recipes/r.toml" });
    expect(c?.table).toBe(ENGINE_TABLES.vllm.at(-1));
    expect(said(c?.warning)).toBe(
      "recipes/r.toml: the vLLM version of image vllm/vllm-openai:latest is not known, " +
        `so its args are checked against vllm serve ${ENGINE_TABLES.vllm.at(-1)?.version ?? ""}, ` +
        'the newest table; set engine_version = "<version>" in recipes/r.toml ' +
        "(`sm121 doctor` reads it from the image on the node)",
    );
  });

  it("a version without a table: the nearest, with a warning", () => {
    expect(nearestTable("vllm", "0.11.0").version).toBe("0.11.1");
    // Between two tables (0.11.1 and 0.17.1, three minors each way): the newer.
    expect(nearestTable("vllm", "0.14.0").version).toBe("0.17.1");
    expect(nearestTable("vllm", "0.32.0").version).toBe("0.32.0");
    const c = tableFor("vllm", { image: "vllm/vllm-openai:v0.12.0", file: "recipes/r.toml" });
    expect(c?.table.version).toBe("0.11.1");
    expect(said(c?.warning)).toMatch(
      new RegExp(
        String.raw`^recipes/r\.toml: no option table for vLLM 0\.12\.0 ` +
          String.raw`\(vllm/vllm-openai:v0\.12\.0: its tag names vllm 0\.12\.0\); ` +
          String.raw`its args are checked against vllm serve 0\.11\.1, the nearest`,
      ),
    );
  });

  it("a flag the image's vLLM does not have is refused, naming that version", () => {
    // --allowed-media-domains is in vLLM 0.33.0 and not in 0.10.2 (NGC 25.10).
    const text = (image: string) =>
      `model = "Q/q"\nimage = "${image}"\nport = 8000\nargs = ["--allowed-media-domains", "example.com"]\n`;
    expect(() => parseRecipe("recipes/r.toml", text("vllm/vllm-openai:v0.33.0"))).not.toThrow();
    expect(() => parseRecipe("recipes/r.toml", text("nvcr.io/nvidia/vllm:25.10-py3"))).toThrow(
      "recipes/r.toml:4:9: args[0]: --allowed-media-domains is not an option of vllm serve 0.10.2",
    );
  });
});

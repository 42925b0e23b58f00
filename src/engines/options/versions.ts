/**
 * Which version of the engine a recipe runs, and so which option table its `args` are checked
 * against: the recipe's `engine_version`, else the version its image carries (a committed table of
 * known image tags: NVIDIA's NGC releases by their release notes, upstream tags by the version they
 * name), else unknown. An unknown version is checked against the nearest table there is, with a
 * warning that says how to name it (`sm121 doctor` reads it from the image on the node).
 */
import { msg, type Msg } from "../../text/messages";
import { ENGINE_TABLES, type OptionTable } from "./table";

export type TabledEngine = keyof typeof ENGINE_TABLES;

export interface KnownImage {
  image: string;
  engine: TabledEngine;
  version: string;
  /** Where the version comes from. */
  source: string;
}

/** Images whose engine version is published. */
export const KNOWN_IMAGES: readonly KnownImage[] = [
  { image: "nvcr.io/nvidia/vllm:25.10-py3", engine: "vllm", version: "0.10.2", source: "NGC vLLM release 25.10" },
  { image: "nvcr.io/nvidia/vllm:26.01-py3", engine: "vllm", version: "0.11.1", source: "NGC vLLM release 26.01" },
  { image: "nvcr.io/nvidia/vllm:26.03-py3", engine: "vllm", version: "0.17.1", source: "NGC vLLM release 26.03" },
  { image: "nvcr.io/nvidia/vllm:26.05-py3", engine: "vllm", version: "0.20.1", source: "NGC vLLM release 26.05" },
  { image: "nvcr.io/nvidia/vllm:26.10-py3", engine: "vllm", version: "0.31.0", source: "NGC vLLM release 26.10" },
];

/** Upstream repositories whose tags name the engine's version: `v0.33.0`, `v0.5.23-cu130`. */
const UPSTREAM: Readonly<Record<string, TabledEngine>> = {
  "vllm/vllm-openai": "vllm",
  "docker.io/vllm/vllm-openai": "vllm",
  "lmsysorg/sglang": "sglang",
  "docker.io/lmsysorg/sglang": "sglang",
};

export interface TableChoice {
  table: OptionTable;
  /** What the plan says: the table and why it is that one. */
  said: string;
  /** Set when the version is unknown or has no table: the table is the nearest one. */
  warning?: Msg;
}

/** A version as numbers, for "nearest": 0.10.2 -> [0, 10, 2]; a suffix (`.post1`, `rc1`) is ignored. */
function parts(v: string): number[] {
  return v
    .split(/[.+-]/)
    .map((p) => Number.parseInt(p, 10))
    .filter((n) => Number.isFinite(n));
}

function distance(a: string, b: string): number[] {
  const x = parts(a);
  const y = parts(b);
  return Array.from({ length: Math.max(x.length, y.length, 3) }, (_, i) => Math.abs((x[i] ?? 0) - (y[i] ?? 0)));
}

const lexLess = (a: number[], b: number[]): boolean => {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  }
  return false;
};

/** The table of `version`, or the nearest (by major, then minor, then patch; the newer on a tie). */
export function nearestTable(engine: TabledEngine, version: string): OptionTable {
  const tables = ENGINE_TABLES[engine];
  let best = tables[tables.length - 1] as OptionTable;
  for (const t of [...tables].reverse()) {
    if (lexLess(distance(t.version, version), distance(best.version, version))) best = t;
  }
  return best;
}

/** The engine version an image carries, when the image is known or its tag names it. */
export function imageVersion(image: string): { engine: TabledEngine; version: string; source: string } | undefined {
  const known = KNOWN_IMAGES.find((k) => k.image === image);
  if (known !== undefined) return known;
  const at = image.lastIndexOf(":");
  if (at < 0 || image.includes("@")) return undefined;
  const engine = UPSTREAM[image.slice(0, at)];
  const tag = /^v(\d+\.\d+\.\d+(?:\.post\d+)?)(?:-[a-z0-9.]+)?$/.exec(image.slice(at + 1));
  if (engine === undefined || tag?.[1] === undefined) return undefined;
  return { engine, version: tag[1], source: `its tag names ${engine} ${tag[1]}` };
}

/** The table a recipe's `args` are checked against; undefined for engines without one (gr8, DGPP). */
export function tableFor(
  engine: string,
  o: { engineVersion?: string | undefined; image?: string | undefined; file: string },
): TableChoice | undefined {
  if (engine !== "vllm" && engine !== "sglang") return undefined;
  const name = engine === "vllm" ? "vLLM" : "SGLang";
  const from =
    o.engineVersion !== undefined
      ? { version: o.engineVersion, why: `engine_version in ${o.file}` }
      : knownOf(engine, o.image);
  if (from === undefined) {
    const table = ENGINE_TABLES[engine][ENGINE_TABLES[engine].length - 1] as OptionTable;
    const said = `${table.prog} ${table.version} (the newest table)`;
    if (o.image === undefined) {
      return { table, said: `${said}; set engine_version in ${o.file} to the ${name} on the nodes` };
    }
    return {
      table,
      said: `${said}: the ${name} version of ${o.image} is not known`,
      warning: msg("spec.warn.imageVersion", {
        file: o.file,
        engine: name,
        image: o.image,
        table: `${table.prog} ${table.version}`,
      }),
    };
  }
  const table = nearestTable(engine, from.version);
  if (table.version === from.version) return { table, said: `${table.prog} ${table.version} (${from.why})` };
  const have = ENGINE_TABLES[engine].map((t) => t.version).join(", ");
  return {
    table,
    said: `${table.prog} ${table.version}, the nearest table to ${name} ${from.version} (${from.why})`,
    warning: msg("spec.warn.noTable", {
      file: o.file,
      engine: name,
      version: from.version,
      why: from.why,
      table: `${table.prog} ${table.version}`,
      have,
    }),
  };
}

function knownOf(engine: TabledEngine, image: string | undefined): { version: string; why: string } | undefined {
  if (image === undefined) return undefined;
  const v = imageVersion(image);
  if (v === undefined || v.engine !== engine) return undefined;
  return { version: v.version, why: `${image}: ${v.source}` };
}

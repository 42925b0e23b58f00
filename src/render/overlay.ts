/**
 * Overlays: a directory with docker-args.txt (-e and -v pairs) and manifest.json, built by the
 * overlay builder. Its pairs go to the end of EXTRA_DOCKER_ARGS. Its identity is the sha256 over
 * the bytes of docker-args.txt followed by the bytes of manifest.json: a rebuild that changes
 * either file changes the .env identity, so the server restarts and sees the new files.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { collectErrors, SpecError, throwIfAny } from "../recipe/errors";
import { msg, type Msg } from "../text/messages";
import { sha256 } from "./identity";
import {
  containerPath,
  DockerArgPair,
  envName,
  LocatedPair,
  mountTarget,
  pairsFromTokens,
  Token,
  tokenizeLine,
} from "./dockerargs";

export type { DockerArgPair, LocatedPair } from "./dockerargs";

export interface Overlay {
  /** The directory as given; it is written into the `# sm121-overlay:` header line. */
  dir: string;
  dockerArgs: LocatedPair[];
  /** manifest.json, parsed. */
  manifest: unknown;
  /** manifest.json as built: it goes into the deployment's state on the node without a change (seed 001). */
  manifestText: string;
  /** sha256 hex of the bytes of docker-args.txt followed by the bytes of manifest.json. */
  sha256: string;
}

export const DOCKER_ARGS_FILE = "docker-args.txt";
export const MANIFEST_FILE = "manifest.json";

/**
 * Parses docker-args.txt: -e/-v pairs separated by any white space, also across lines; a line that
 * starts with `#` is a comment. `startLine` is the line number of the first line of `text`.
 */
export function parseDockerArgs(file: string, text: string, startLine = 1): LocatedPair[] {
  const errors: SpecError[] = [];
  const tokens: Token[] = [];
  text.split("\n").forEach((raw, i) => {
    const lineText = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (lineText.trimStart().startsWith("#")) return;
    tokens.push(...tokenizeLine(lineText, startLine + i, 1));
  });
  const pairs = pairsFromTokens(file, "", tokens, errors, false);
  throwIfAny(errors);
  return pairs;
}

/** sha256 hex of the docker-args.txt bytes followed by the manifest.json bytes. */
export function overlaySha256(dockerArgs: Uint8Array, manifest: Uint8Array): string {
  return sha256(dockerArgs, manifest);
}

/** Builds an Overlay from the two files' bytes (pure; loadOverlay reads them). */
export function parseOverlay(dir: string, dockerArgs: Uint8Array, manifest: Uint8Array): Overlay {
  const errors: SpecError[] = [];
  const argsFile = path.join(dir, DOCKER_ARGS_FILE);
  const manifestFile = path.join(dir, MANIFEST_FILE);
  if ([...dir].some((c) => /\s/.test(c) || (c.codePointAt(0) ?? 0) < 0x20 || c === "\u007f")) {
    errors.push(
      new SpecError({
        file: dir,
        line: 1,
        col: 1,
        field: "overlay",
        problem: msg("spec.overlay.dirName"),
        fix: msg("spec.overlay.dirNameFix"),
      }),
    );
  }
  const pairs: LocatedPair[] =
    collectErrors(errors, () => parseDockerArgs(argsFile, Buffer.from(dockerArgs).toString("utf8"))) ?? [];
  let parsed: unknown;
  const manifestText = Buffer.from(manifest).toString("utf8");
  try {
    parsed = JSON.parse(manifestText);
  } catch (e) {
    errors.push(jsonError(manifestFile, manifestText, e instanceof Error ? e.message : String(e)));
  }
  throwIfAny(errors);
  return { dir, dockerArgs: pairs, manifest: parsed, manifestText, sha256: overlaySha256(dockerArgs, manifest) };
}

/** A JSON.parse failure as a SpecError; V8 quotes the input after `, "`, which stays out. */
function jsonError(file: string, text: string, message: string): SpecError {
  const why = (/^(.*?)(?:, ".*)?$/s.exec(message)?.[1] ?? message).split("\n")[0] ?? "";
  const at = /at position (\d+)/.exec(why);
  const before = text.slice(0, at === null ? 0 : Number(at[1]));
  const lines = before.split("\n");
  const line = lines.length;
  const col = (lines[lines.length - 1] ?? "").length + 1;
  return new SpecError({
    file,
    line,
    col,
    field: "",
    problem: msg("spec.overlay.json", { why }),
    fix: msg("spec.overlay.jsonFix"),
  });
}

/** Reads DIR/docker-args.txt and DIR/manifest.json; both are required. */
export function loadOverlay(dir: string): Overlay {
  const errors: SpecError[] = [];
  const read = (name: string): Buffer | undefined => {
    const file = path.join(dir, name);
    try {
      return readFileSync(file);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? "read error";
      const problem =
        code === "ENOENT" ? msg("spec.overlay.missing", { name }) : msg("spec.overlay.unreadable", { name, code });
      const fix = msg("spec.overlay.missingFix", { args: DOCKER_ARGS_FILE, manifest: MANIFEST_FILE, dir });
      errors.push(new SpecError({ file, line: 1, col: 1, field: "overlay", problem, fix }));
      return undefined;
    }
  };
  const args = read(DOCKER_ARGS_FILE);
  const manifest = read(MANIFEST_FILE);
  throwIfAny(errors);
  return parseOverlay(dir, args ?? Buffer.alloc(0), manifest ?? Buffer.alloc(0));
}

export interface MergeInput {
  /** The profile's EXTRA_DOCKER_ARGS pairs, after variable substitution. */
  profile: LocatedPair[];
  overlay?: Overlay;
  overlayWins: boolean;
  /** Container paths that start.sh mounts itself. */
  ownedMounts: string[];
  /** The node recipe's dockerArgs (site: nodes.<n>.recipes.<name>.dockerArgs): added last, never replacing. */
  node?: LocatedPair[];
}

export interface MergeResult {
  pairs: LocatedPair[];
  /** The profile pairs an overlay replaced: a message each, said where it is printed. */
  replacements: Msg[];
}

/**
 * Joins the profile pairs, the overlay pairs and the node recipe's pairs. A mount on a path that
 * start.sh owns is always an error; the same container path or -e name in the profile and the
 * overlay is an error unless the overlay wins, and then the profile pair goes and a replacement
 * line tells the plan. The node recipe's pairs come last by the same rules, but never replace one:
 * a pair of the profile or overlay on the same path or name refuses them.
 */
export function mergeDockerArgs(input: MergeInput, errors: SpecError[]): MergeResult {
  const owned = new Set(input.ownedMounts.map(containerPath));
  const byKey = (pairs: LocatedPair[], who: Msg): Map<string, LocatedPair> => {
    const seen = new Map<string, LocatedPair>();
    for (const p of pairs) {
      const k = pairKey(p);
      const first = seen.get(k);
      if (first !== undefined) {
        errors.push(
          at(
            p,
            msg("spec.overlay.twice", { pair: describe(p), what: what(p), who, line: first.line }),
            msg("spec.directive.twiceFix"),
          ),
        );
        continue;
      }
      seen.set(k, p);
      if (p.flag === "-v" && owned.has(mountTarget(p.value))) {
        errors.push(
          at(
            p,
            msg("spec.overlay.owned", { pair: describe(p), path: mountTarget(p.value) }),
            msg("spec.overlay.ownedFix", { path: mountTarget(p.value) }),
          ),
        );
      }
    }
    return seen;
  };
  const profile = byKey(input.profile, msg("spec.overlay.inProfile"));
  const overlayPairs = input.overlay?.dockerArgs ?? [];
  byKey(overlayPairs, msg("spec.overlay.inOverlay"));
  const replaced = new Set<LocatedPair>();
  const replacements: Msg[] = [];
  for (const o of overlayPairs) {
    const p = profile.get(pairKey(o));
    if (p === undefined || replaced.has(p)) continue;
    if (input.overlayWins) {
      replaced.add(p);
      replacements.push(msg("state.overlayReplaces", { profile: describe(p), overlay: describe(o) }));
      continue;
    }
    errors.push(
      at(
        o,
        msg(o.flag === "-v" ? "spec.overlay.profileMounts" : "spec.overlay.profileSets", {
          pair: describe(o),
          what: what(o),
          other: describe(p),
          at: `${p.file}:${p.line}:${p.col}`,
        }),
        msg(o.flag === "-v" ? "spec.overlay.mountWinsFix" : "spec.overlay.valueWinsFix"),
      ),
    );
  }
  const kept = [...input.profile.filter((p) => !replaced.has(p)), ...overlayPairs];
  const nodePairs = input.node ?? [];
  byKey(nodePairs, msg("spec.overlay.inNode"));
  const taken = new Map(kept.map((p) => [pairKey(p), p]));
  for (const n of nodePairs) {
    const p = taken.get(pairKey(n));
    if (p === undefined) continue;
    const who = msg(overlayPairs.includes(p) ? "spec.overlay.theOverlay" : "spec.overlay.theProfile");
    const args = { pair: describe(n), what: what(n), who, other: describe(p), at: `${p.file}:${p.line}:${p.col}` };
    errors.push(
      at(
        n,
        msg(n.flag === "-v" ? "spec.overlay.alsoMounts" : "spec.overlay.alsoSets", args),
        msg("spec.overlay.nodeFix", { who }),
      ),
    );
  }
  return { pairs: [...kept, ...nodePairs], replacements };
}

function pairKey(p: DockerArgPair): string {
  return p.flag === "-v" ? `-v ${mountTarget(p.value)}` : `-e ${envName(p.value)}`;
}

function describe(p: DockerArgPair): string {
  return `${p.flag} ${p.value}`;
}

function what(p: DockerArgPair): Msg {
  return p.flag === "-v"
    ? msg("spec.overlay.mounts", { path: mountTarget(p.value) })
    : msg("spec.overlay.sets", { name: envName(p.value) });
}

function at(p: LocatedPair, problem: Msg, fix: Msg): SpecError {
  return new SpecError({ file: p.file, line: p.line, col: p.col, field: p.field, problem, fix });
}

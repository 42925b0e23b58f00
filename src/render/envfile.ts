/**
 * The rendered recipe .env (seed 001): a header, then one KEY="value" line per key.
 *
 *   # sm121-profile: best
 *   # sm121-node: spark2
 *   # sm121-recipe: qwen38-flash
 *   # sm121-overlay: none                      (or "<dir> overlay-sha256=<hex>")
 *   # sm121-rendered: @SM121_RENDERED_AT@
 *   # sm121-sha256: <sha256 of the body>
 *   MAX_NUM_SEQS="4"
 *   ...
 *
 * The render is byte-stable: the time of the write is not known at plan time, so the header holds
 * the literal slot @SM121_RENDERED_AT@ and the node fills it in when it writes the file (see
 * fillRenderedAt). The slot is outside the body and outside the identity, so filling it changes
 * neither. The identity (body sha256, profile, overlay line) decides whether `up` writes a file.
 */
import { SpecError, throwIfAny } from "../recipe/errors";
import { envName, LocatedPair, pairsFromTokens, Token, tokenizeLine } from "./dockerargs";
import { envIdentityOf } from "./envidentity";
import { sha256 } from "./identity";
import { NODE_ENV_KEYS } from "../recipe/types";
import { isNodeKey, NAME_PATTERN } from "./keys";
import { mergeDockerArgs, Overlay } from "./overlay";
import { checkVllmArgs, Profile, ProfileEntry } from "./profile";
import { charFault, substitute, VarScope } from "./values";
import { msg, type Msg } from "../text/messages";

export { diffKeys, parseEnvFile } from "./envreader";
export { envIdentityOf } from "./envidentity";
export type { KeyDiff, ParsedEnvFile } from "./envreader";

export const RENDERED_AT_SLOT = "@SM121_RENDERED_AT@";

export interface RenderEnvInput {
  profile: Profile;
  node: string;
  /** The node-side recipe name; it must equal the profile's sm121-recipe. */
  recipe: string;
  /** The node keys (HF_HOME, BIND, PORT, REQUIRE_IDLE_GPU); nothing else. */
  nodeEnv: Record<string, string>;
  /** Node vars merged with the node recipe's vars (recipe vars win). */
  vars: Record<string, string>;
  /** The value of {{recipeDir}}; it overrides a var of that name. */
  recipeDir: string;
  overlay?: Overlay;
  overlayWins?: boolean;
  /** The node recipe's dockerArgs pairs, added to EXTRA_DOCKER_ARGS after the overlay's. */
  nodeDockerArgs?: LocatedPair[];
  /** Container paths that start.sh mounts itself. */
  ownedMounts?: string[];
  /**
   * The node's fabric variables (fabric/env.render.ts) for start.sh's container: -e pairs added to
   * EXTRA_DOCKER_ARGS last, except a name the profile, overlay or node recipe sets itself.
   */
  fabricEnv?: Record<string, string>;
  /** Names the site in messages about nodeEnv (default "site"). */
  siteFile?: string;
}

export interface RenderedEnv {
  text: string;
  body: string;
  bodySha256: string;
  overlayLine: string;
  identity: string;
  keys: Record<string, string>;
  mkdirs: string[];
  proofs: string[];
  replacements: Msg[];
  /** Fabric variables the profile, overlay or node recipe set themselves (theirs stays). */
  fabricOwn: string[];
}

/** Fills the rendered-at slot: the serve's write step does it as it writes the file. */
export function fillRenderedAt(text: string, isoTime: string): string {
  return text.replace(`# sm121-rendered: ${RENDERED_AT_SLOT}\n`, `# sm121-rendered: ${isoTime}\n`);
}

export function renderEnv(input: RenderEnvInput): RenderedEnv {
  const { profile } = input;
  const errors: SpecError[] = [];
  checkInput(input, errors);
  const scope: VarScope = {
    vars: { ...input.vars, recipeDir: input.recipeDir },
    file: profile.file,
    field: "",
    source: msg("spec.env.source", { node: input.node }),
  };
  const keys: Record<string, string> = {};
  const order: string[] = [];
  let profilePairs: LocatedPair[] = [];
  for (const e of profile.entries) {
    order.push(e.key);
    if (e.key === "EXTRA_DOCKER_ARGS") profilePairs = dockerPairs(e, { ...scope, field: e.key }, errors);
    else keys[e.key] = renderValue(e, { ...scope, field: e.key }, errors);
  }
  const merged = mergeDockerArgs(
    {
      profile: profilePairs,
      overlay: input.overlay,
      overlayWins: input.overlayWins === true,
      ownedMounts: input.ownedMounts ?? [],
      node: input.nodeDockerArgs ?? [],
    },
    errors,
  );
  const taken = new Set(merged.pairs.filter((p) => p.flag === "-e").map((p) => envName(p.value)));
  const fabric = Object.entries(input.fabricEnv ?? {});
  const fabricOwn = fabric.filter(([k]) => taken.has(k)).map(([k]) => k);
  const fabricPairs = fabric.filter(([k]) => !taken.has(k)).map(([k, v]) => `-e ${k}=${v}`);
  const extra = input.overlay !== undefined || (input.nodeDockerArgs ?? []).length > 0 || fabricPairs.length > 0;
  if (extra || order.includes("EXTRA_DOCKER_ARGS")) {
    keys.EXTRA_DOCKER_ARGS = [...merged.pairs.map((p) => `${p.flag} ${p.value}`), ...fabricPairs].join(" ");
    if (!order.includes("EXTRA_DOCKER_ARGS")) order.push("EXTRA_DOCKER_ARGS");
  }
  for (const k of NODE_ENV_KEYS) {
    const v = input.nodeEnv[k];
    if (v === undefined) continue;
    keys[k] = v;
    order.push(k);
  }
  const mkdirs = profile.directiveList
    .filter((d) => d.name === "mkdir")
    .map((d) => {
      const field = `directive ${d.prefix}-mkdir`;
      const out = substitute({ text: d.value, line: d.line, col: d.valueCol }, "unquoted", { ...scope, field }, errors);
      if (out.ok && !out.text.startsWith("/")) {
        const problem = msg("spec.env.mkdirRelative", {
          path: out.text,
          vars: out.used.map((v) => `{{${v}}}`).join(", "),
        });
        errors.push(
          new SpecError({
            file: profile.file,
            line: d.line,
            col: d.valueCol,
            field,
            problem,
            fix: msg("spec.env.mkdirFix", { source: scope.source }),
          }),
        );
      }
      return out.text;
    });
  throwIfAny(errors);

  const body = order.map((k) => `${k}="${keys[k] ?? ""}"\n`).join("");
  const bodySha256 = sha256(body);
  const overlayLine =
    input.overlay === undefined ? "none" : `${input.overlay.dir} overlay-sha256=${input.overlay.sha256}`;
  // Fields, no words: the file on the node is the same bytes whatever the operator's language.
  const header = [
    `# sm121-profile: ${profile.name}`,
    `# sm121-node: ${input.node}`,
    `# sm121-recipe: ${input.recipe}`,
    `# sm121-overlay: ${overlayLine}`,
    `# sm121-rendered: ${RENDERED_AT_SLOT}`,
    `# sm121-sha256: ${bodySha256}`,
  ];
  return {
    text: header.map((l) => `${l}\n`).join("") + body,
    body,
    bodySha256,
    overlayLine,
    identity: envIdentityOf(bodySha256, profile.name, overlayLine),
    keys,
    mkdirs,
    proofs: [...profile.directives.proofs],
    replacements: merged.replacements,
    fabricOwn,
  };
}

function checkInput(input: RenderEnvInput, errors: SpecError[]): void {
  const site = { file: input.siteFile ?? "site", line: 1, col: 1 };
  const { profile } = input;
  if (!NAME_PATTERN.test(input.node)) {
    errors.push(
      new SpecError({
        ...site,
        field: "node",
        problem: msg("spec.env.nodeName", { node: input.node }),
        fix: msg("spec.env.nameFix"),
      }),
    );
  }
  if (input.recipe !== profile.directives.recipe) {
    const d = profile.directiveList.find((x) => x.name === "recipe");
    errors.push(
      new SpecError({
        file: profile.file,
        line: d?.line ?? 1,
        col: d?.valueCol ?? 1,
        field: `directive ${d?.prefix ?? "sm121"}-recipe`,
        problem: msg("spec.env.otherRecipe", {
          recipe: profile.directives.recipe,
          node: input.node,
          runs: input.recipe,
        }),
        fix: msg("spec.env.otherRecipeFix", {
          profile: profile.name,
          recipe: profile.directives.recipe,
          runs: input.recipe,
        }),
      }),
    );
  }
  for (const [k, v] of Object.entries(input.nodeEnv)) {
    const field = `nodes.${input.node}.env.${k}`;
    if (!isNodeKey(k)) {
      errors.push(
        new SpecError({
          ...site,
          field,
          problem: msg("spec.env.notNodeKey"),
          fix: msg("spec.env.notNodeKeyFix", { keys: NODE_ENV_KEYS.join(", ") }),
        }),
      );
      continue;
    }
    for (const c of v) {
      const fault = charFault(c, "quoted");
      if (fault === undefined) continue;
      errors.push(
        new SpecError({ ...site, field, problem: msg("spec.value.the", { problem: fault.problem }), fix: fault.fix }),
      );
      break;
    }
  }
}

/** Substitutes the variables of a plain value; a multi-line value becomes one line. */
function renderValue(e: ProfileEntry, scope: VarScope, errors: SpecError[]): string {
  const parts = e.segments.map((s) => ({
    ...substitute(s, e.quoted ? "quoted" : "unquoted", scope, errors),
    line: s.line,
    col: s.col,
  }));
  if (e.key === "EXTRA_VLLM_ARGS" && parts.every((p) => p.ok) && parts.some((p) => p.used.length > 0)) {
    const tokens = parts.flatMap((p) => tokenizeLine(p.text, p.line, p.col));
    checkVllmArgs(scope.file, e.key, tokens, errors, true);
  }
  if (e.segments.length === 1) return parts[0]?.text ?? "";
  return parts
    .flatMap((p) => p.text.split(/[ \t]+/))
    .filter((w) => w !== "")
    .join(" ");
}

/** The profile's -e/-v pairs with variables substituted in each word. */
function dockerPairs(e: ProfileEntry, scope: VarScope, errors: SpecError[]): LocatedPair[] {
  const before = errors.length;
  const tokens: Token[] = e.segments
    .flatMap((s) => tokenizeLine(s.text, s.line, s.col))
    .map((t) => {
      const out = substitute(t, "unquoted", scope, errors);
      return { ...t, text: out.text, vars: out.used };
    });
  if (errors.length > before) return [];
  return pairsFromTokens(scope.file, e.key, tokens, errors, false);
}

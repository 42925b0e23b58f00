/**
 * EXTRA_DOCKER_ARGS words: `-e NAME=VALUE` and `-v SRC:DST[:ro|rw]` pairs, nothing else.
 *
 * start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script, so any other word
 * (a flag with its own quoting, a glob, a `;`) would be run or expanded by that script. The same
 * words come from a profile and from an overlay's docker-args.txt.
 */
import * as path from "node:path";
import { MAX_ERRORS, SpecError } from "../recipe/errors";
import { msg, type Msg } from "../text/messages";
import { describeChar, hasPlaceholder, Span, valueFault } from "./values";
import { isSecretKey } from "./keys";

export interface DockerArgPair {
  flag: "-e" | "-v";
  /** "NAME=VALUE" for -e, "SRC:DST[:ro|rw]" for -v. */
  value: string;
}

/** A pair and where its flag word is, for conflict messages. */
export interface LocatedPair extends DockerArgPair {
  file: string;
  /** The key in a profile (EXTRA_DOCKER_ARGS), "" in docker-args.txt. */
  field: string;
  line: number;
  col: number;
}

/** A word of the value; `vars` names the variables substituted into it, if any. */
export interface Token extends Span {
  vars?: string[];
}

const ENV_VALUE = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/;

/** Splits one line of text into words with their columns; `col` is the column of text[0]. */
export function tokenizeLine(text: string, line: number, col: number): Token[] {
  const tokens: Token[] = [];
  const re = /[^ \t]+/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    tokens.push({ text: m[0], line, col: col + m.index });
  }
  return tokens;
}

/** Shows a word in a message, never the value of a secret. */
export function showWord(word: string): string {
  const m = /^(.*?(?:HF_TOKEN|API_KEY))=/.exec(word);
  return m === null ? word : `${m[1] ?? ""}=<redacted>`;
}

/** The container path of a -v value, normalized so that /a/ and /a//b compare as paths. */
export function mountTarget(value: string): string {
  return containerPath(value.split(":")[1] ?? "");
}

export function containerPath(p: string): string {
  const norm = path.posix.normalize(p);
  return norm.length > 1 && norm.endsWith("/") ? norm.slice(0, -1) : norm;
}

export function envName(value: string): string {
  return value.slice(0, Math.max(0, value.indexOf("=")));
}

/**
 * Reads -e/-v pairs from words. `placeholders`: the words still hold `{{name}}` (a profile before
 * rendering), so a path may start with a placeholder instead of `/`.
 */
export function pairsFromTokens(
  file: string,
  field: string,
  tokens: Token[],
  errors: SpecError[],
  placeholders: boolean,
): LocatedPair[] {
  const pairs: LocatedPair[] = [];
  const fail = (t: Token, problem: Msg, fix: Msg): void => {
    const vars = t.vars?.map((v) => `{{${v}}}`).join(", ") ?? "";
    const said = vars === "" ? problem : msg("spec.docker.substituted", { problem, vars });
    errors.push(new SpecError({ file, line: t.line, col: t.col, field, problem: said, fix }));
  };
  let i = 0;
  while (i < tokens.length && errors.length <= MAX_ERRORS) {
    const flag = tokens[i];
    if (flag === undefined) break;
    if (flag.text !== "-e" && flag.text !== "-v") {
      const { problem, fix } = notAPair(flag.text);
      fail(flag, problem, fix);
      i += 1;
      continue;
    }
    const word = tokens[i + 1];
    if (word === undefined || word.text === "-e" || word.text === "-v") {
      const shape = flag.text === "-e" ? "-e NAME=VALUE" : "-v SRC:DST[:ro|rw]";
      fail(flag, msg("spec.docker.noValue", { flag: flag.text }), msg("spec.docker.writeFix", { shape }));
      i += 1;
      continue;
    }
    i += 2;
    const fault = valueFault(word.text, "unquoted");
    if (fault !== undefined) {
      const problem =
        fault.char === undefined ? fault.problem : msg("spec.value.contains", { char: describeChar(fault.char) });
      const fix = fault.char === undefined ? fault.fix : msg("spec.docker.wordFix");
      fail(
        { ...word, col: word.col + fault.index },
        msg("spec.docker.word", { flag: flag.text, word: showWord(word.text), problem }),
        fix,
      );
      continue;
    }
    const problem = flag.text === "-e" ? envProblem(word.text) : mountProblem(word.text, placeholders);
    if (problem !== undefined) {
      fail(word, problem.problem, problem.fix);
      continue;
    }
    pairs.push({ flag: flag.text, value: word.text, file, field, line: flag.line, col: flag.col });
  }
  return pairs;
}

function notAPair(word: string): { problem: Msg; fix: Msg } {
  const problem = msg("spec.docker.notAPair", { word: showWord(word) });
  if (/^-[ev]./.test(word)) return { problem, fix: msg("spec.docker.twoWordsFix", { flag: word.slice(0, 2) }) };
  if (/^--(env|volume|mount)\b/.test(word)) return { problem, fix: msg("spec.docker.shortFix") };
  return { problem, fix: msg("spec.docker.notAPairFix") };
}

function envProblem(value: string): { problem: Msg; fix: Msg } | undefined {
  const m = ENV_VALUE.exec(value);
  if (m === null)
    return { problem: msg("spec.docker.notEnv", { word: showWord(value) }), fix: msg("spec.docker.notEnvFix") };
  const name = m[1] ?? "";
  if (isSecretKey(name))
    return { problem: msg("spec.docker.secret", { name }), fix: msg("spec.docker.secretFix", { name }) };
  return undefined;
}

function mountProblem(value: string, placeholders: boolean): { problem: Msg; fix: Msg } | undefined {
  const parts = value.split(":");
  const [src = "", dst = "", mode] = parts;
  const fix = msg("spec.docker.mountFix");
  if (parts.length < 2 || parts.length > 3 || src === "" || dst === "")
    return { problem: msg("spec.docker.notMount", { value }), fix };
  if (mode !== undefined && mode !== "ro" && mode !== "rw")
    return { problem: msg("spec.docker.mode", { value, mode }), fix: msg("spec.docker.modeFix") };
  const absolute = (p: string): boolean =>
    p.startsWith("/") || (placeholders && hasPlaceholder(p) && p.startsWith("{{"));
  if (!absolute(src)) return { problem: msg("spec.docker.source", { value, src }), fix: msg("spec.docker.sourceFix") };
  if (!absolute(dst)) return { problem: msg("spec.docker.target", { value, dst }), fix };
  if ([...src.split("/"), ...dst.split("/")].includes(".."))
    return { problem: msg("spec.docker.dotDot", { value }), fix: msg("spec.docker.dotDotFix") };
  return undefined;
}

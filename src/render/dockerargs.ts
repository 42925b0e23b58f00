/**
 * EXTRA_DOCKER_ARGS words: `-e NAME=VALUE` and `-v SRC:DST[:ro|rw]` pairs, nothing else.
 *
 * start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script, so any other word
 * (a flag with its own quoting, a glob, a `;`) would be run or expanded by that script. The same
 * words come from a profile and from an overlay's docker-args.txt.
 */
import * as path from "node:path";
import { MAX_ERRORS, SpecError } from "../recipe/errors";
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

const WHY = "start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
const PAIRS = "only -e NAME=VALUE and -v SRC:DST[:ro|rw] pairs are allowed";
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
  const fail = (t: Token, problem: string, fix: string): void => {
    const after = t.vars !== undefined && t.vars.length > 0 ? ` (after substituting ${t.vars.map((v) => `{{${v}}}`).join(", ")})` : "";
    errors.push(new SpecError({ file, line: t.line, col: t.col, field, problem: problem + after, fix }));
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
      fail(flag, `${flag.text} has no value`, `write ${shape}`);
      i += 1;
      continue;
    }
    i += 2;
    const fault = valueFault(word.text, "unquoted");
    if (fault !== undefined) {
      const problem = fault.char === undefined ? fault.problem : `contains ${describeChar(fault.char)}`;
      const fix = fault.char === undefined ? fault.fix : `a word here may hold only letters, digits and _ . / : = , @ + % -, because ${WHY}`;
      fail({ ...word, col: word.col + fault.index }, `${flag.text} ${showWord(word.text)} ${problem}`, fix);
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

function notAPair(word: string): { problem: string; fix: string } {
  const shown = showWord(word);
  const problem = `\`${shown}\` is not part of a -e or -v pair: ${PAIRS}, because ${WHY}`;
  if (/^-[ev]./.test(word)) return { problem, fix: `write ${word.slice(0, 2)} and its value as two words` };
  if (/^--(env|volume|mount)\b/.test(word)) return { problem, fix: "use the short form: -e NAME=VALUE or -v SRC:DST[:ro|rw]" };
  return { problem, fix: "remove it, or set what it does through a -e or -v pair or a recipe key" };
}

function envProblem(value: string): { problem: string; fix: string } | undefined {
  const m = ENV_VALUE.exec(value);
  if (m === null) {
    return { problem: `-e ${showWord(value)} is not NAME=VALUE`, fix: "write -e NAME=VALUE with a name of letters, digits and _" };
  }
  const name = m[1] ?? "";
  if (isSecretKey(name)) {
    return {
      problem: `-e ${name} puts a secret into EXTRA_DOCKER_ARGS`,
      fix: `remove it; ${name} belongs in the node .env or a Pulumi secret`,
    };
  }
  return undefined;
}

function mountProblem(value: string, placeholders: boolean): { problem: string; fix: string } | undefined {
  const parts = value.split(":");
  const [src = "", dst = "", mode] = parts;
  const fix = "write -v /absolute/source:/absolute/target, optionally with :ro or :rw";
  if (parts.length < 2 || parts.length > 3 || src === "" || dst === "") {
    return { problem: `-v ${value} is not SRC:DST[:ro|rw]`, fix };
  }
  if (mode !== undefined && mode !== "ro" && mode !== "rw") {
    return { problem: `-v ${value} has mode \`${mode}\``, fix: "use :ro or :rw, or no mode" };
  }
  const absolute = (p: string): boolean => p.startsWith("/") || (placeholders && hasPlaceholder(p) && p.startsWith("{{"));
  if (!absolute(src)) return { problem: `-v ${value}: source ${src} is not an absolute path`, fix: `${fix}; the source is a path on the node` };
  if (!absolute(dst)) return { problem: `-v ${value}: target ${dst} is not an absolute path`, fix };
  if ([...src.split("/"), ...dst.split("/")].includes("..")) return { problem: `-v ${value} has a ".." segment`, fix: `${fix}, without ..` };
  return undefined;
}

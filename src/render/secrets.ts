/**
 * What each secret may hold, by the paths it travels, checked at plan time: a value a path cannot
 * carry is refused with its config key and the reason, before any node is touched. Never with the
 * value, nor any part of it.
 *
 * - Both travel as a line of a file a shell sources (text/assign) and as an environment variable:
 *   no NUL, no line break; and each ends in an HTTP header (HF_TOKEN to the Hugging Face Hub,
 *   the API key from sm121's probe and every client), which carries no control character.
 * - The API key is compared by the engines with the Authorization header they read as Latin-1
 *   (uvicorn and Starlette), after the server strips the header's surrounding white space: a key
 *   outside printable ASCII, or with white space at either end, would never match.
 * - SGLang reads its --config file back into its command line as `--api-key <key>`
 *   (sglang/srt/utils/server_args_config_parser.py), where its parser takes a key that looks like
 *   an option for one: SGLang 0.5.23 then stops with "argument --api-key: expected one argument".
 */
import { OptionIndex } from "../engines/options/argparse";
import { SGLANG_OPTIONS } from "../engines/options/table";
import type { EngineName } from "../recipe/types";
import { SECRET_CONFIG, type SecretKey } from "./keys";

const setAgain = (key: SecretKey, what = "it again") =>
  `set ${what} with \`pulumi config set --secret ${SECRET_CONFIG[key]}\` (the value on stdin)`;

function controlChar(value: string): string | undefined {
  for (const ch of value) {
    const c = ch.codePointAt(0) ?? 0;
    if (c === 0) return "a NUL byte, which no environment variable or file line can carry";
    if (c === 10 || c === 13) return "a line break, which neither a file line nor an HTTP header can carry";
    if ((c < 32 && c !== 9) || c === 127) {
      const code = c.toString(16).toUpperCase().padStart(4, "0");
      return `a control character (U+${code}), which an HTTP header cannot carry`;
    }
  }
  return undefined;
}

/** Whether SGLang's parser reads `--api-key <key>` with the key as its value. */
function sglangTakes(key: string): boolean {
  return key !== "--" && new OptionIndex(SGLANG_OPTIONS).classify(key).kind === "positional";
}

/** Why the API key cannot reach an engine and back, or undefined. */
function apiKeyFault(v: string, sglang: readonly string[]): string | undefined {
  const name = SECRET_CONFIG.API_KEY;
  if (v === "") {
    return (
      `${name} is empty, and an engine given an empty key refuses every client; ` +
      `set a key, or remove it with \`pulumi config rm ${name}\``
    );
  }
  if (/[^\x20-\x7e\t]/.test(v)) {
    return (
      `${name} holds a character outside ASCII: the engines compare the key with the Authorization ` +
      `header, which they read as Latin-1, so no client (nor sm121's probe) could authenticate; ` +
      setAgain("API_KEY", "a key in printable ASCII")
    );
  }
  if (/^\s|\s$/.test(v)) {
    return (
      `${name} begins or ends with white space, which HTTP servers strip from the Authorization ` +
      `header before the engine compares it; ${setAgain("API_KEY", "it without that white space")}`
    );
  }
  if (sglang.length > 0 && !sglangTakes(v)) {
    const which = `deployment${sglang.length > 1 ? "s" : ""} ${sglang.join(", ")}`;
    return (
      `${name} begins with "-", and SGLang (${which}) reads its --config file back into its ` +
      "command line as --api-key <key>, where its parser takes the key for an option (SGLang 0.5.23 " +
      `stops with "argument --api-key: expected one argument"); ` +
      setAgain("API_KEY", 'a key that does not begin with "-"')
    );
  }
  return undefined;
}

/** The refusals for the secrets this run holds, given the engines of the deployments it serves. */
export function secretRefusals(
  secrets: Partial<Record<SecretKey, string>>,
  deployments: ReadonlyArray<{ deployment: string; engine: EngineName }>,
): string[] {
  const out: string[] = [];
  const sglang = deployments.filter((d) => d.engine === "sglang").map((d) => d.deployment);
  for (const key of ["HF_TOKEN", "API_KEY"] as const) {
    const v = secrets[key];
    if (v === undefined) continue;
    const bad = controlChar(v);
    if (bad !== undefined) out.push(`${SECRET_CONFIG[key]} holds ${bad}; ${setAgain(key)}`);
    else if (key === "API_KEY") {
      const fault = apiKeyFault(v, sglang);
      if (fault !== undefined) out.push(fault);
    }
  }
  return out;
}

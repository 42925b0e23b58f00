/**
 * `<stateDir>/secrets.env`, the file where sm121's Pulumi secrets rest on a node (0600): its path,
 * what it holds, its one writer and its one reader. Each line is one text/assign assignment; the
 * node reads a value back with text/assign's `sm121_get` (never by sourcing the file), here for
 * the engine's start (`exportSecrets`) and in render/apikey for the API key sm121 sends.
 */
import { ASSIGNMENT_READER, assignment } from "../text/assign";
import { joinNode, nodePath, quote } from "../text/shell";

/** What secrets.env holds: the Pulumi secrets and vLLM's name for the key. */
export const SECRETS_ENV_KEYS = ["HF_TOKEN", "API_KEY", "VLLM_API_KEY"] as const;

/** The file's path on the node (a node path: `~/` is the node user's home). */
export function secretsEnvPath(stateDir: string): string {
  return joinNode(stateDir, "secrets.env");
}

/**
 * The writer: writes secrets.env through a temp file and a rename (0600 under the write step's
 * umask), or removes it when sm121 holds none of its keys.
 */
export function secretsEnvScript(stateDir: string, secrets: Readonly<Record<string, string>>): string {
  const f = `${nodePath(stateDir)}/secrets.env`;
  const key = secrets["API_KEY"];
  const values: Record<string, string | undefined> = { HF_TOKEN: secrets["HF_TOKEN"], API_KEY: key, VLLM_API_KEY: key };
  const lines = SECRETS_ENV_KEYS.flatMap((k) => {
    const v = values[k];
    return v === undefined ? [] : [quote(assignment(k, v))];
  });
  if (lines.length === 0) return `rm -f ${f}`;
  return `printf '%s\\n' ${lines.join(" ")} > ${f}.sm121-tmp && mv ${f}.sm121-tmp ${f}`;
}

/**
 * The reader: exports each key the file holds (a line in a form sm121_get does not read is
 * named on stderr and not passed); with `docker`, also collects `-e NAME` for each in the array
 * `secrets`, so that `docker run` takes the values from its own environment, none on its command line.
 */
export function exportSecrets(stateDir: string, docker = false): string {
  const f = `${nodePath(stateDir)}/secrets.env`;
  return [
    ASSIGNMENT_READER,
    ...(docker ? ["secrets=()"] : []),
    `for k in ${SECRETS_ENV_KEYS.join(" ")}; do sm121_get ${f} "$k" && rc=0 || rc=$?`,
    `  if [ "$rc" = 0 ]; then export "$k=$REPLY";${docker ? ' secrets+=(-e "$k");' : ""} fi`,
    '  if [ "$rc" = 2 ]; then echo "sm121: secrets.env: $k is in no form sm121 reads; not passed" >&2; fi',
    "done; unset REPLY",
  ].join("\n");
}

/**
 * Where secrets rest on a node, and how long. Every line is one text/assign assignment, written
 * by a script that reached the node on stdin:
 * - `<stateDir>/secrets.env` (0600): sm121:hfToken and sm121:apiKey (and VLLM_API_KEY, vLLM's
 *   name for the key), written and read by targets/secretsenv;
 * - a script recipe's `.env`: HF_TOKEN (a Pulumi secret, or the operator's own line carried over);
 * - backups of that `.env` (`.env.sm121-bak-<UTC>`, 0600): kept to sm121:keepBackups per file, and
 *   rewritten with the current secret line when sm121 holds one, so a rotated-out value does not
 *   stay in them.
 * A deployment's delete (destroy, a removal from the site, `sm121 down`) removes its state
 * directory, and the secret lines sm121 wrote into the recipe's `.env` and its backups.
 */
import type { NodeBundle } from "../render/types";
import { envFileOf } from "../render/node";
import { assignment } from "../text/assign";
import { nodePath, quote } from "../text/shell";

/** The secrets a script recipe's .env may hold; API_KEY only as the operator's own line. */
export const ENV_SECRET_KEYS = ["HF_TOKEN", "API_KEY"] as const;

/** Backups kept per file when the site does not say (sm121:keepBackups). */
export const DEFAULT_KEEP_BACKUPS = 3;

/**
 * The secret lines sm121 writes into a script recipe's .env: HF_TOKEN when sm121 holds it. A
 * script recipe's start.sh passes API_KEY as --api-key (seed 001), where every process listing
 * shows it: sm121 carries an operator's own API_KEY line over but never writes its own.
 */
export function envSecrets(secrets: Readonly<Record<string, string>>): Array<[string, string]> {
  const v = secrets["HF_TOKEN"];
  return v === undefined ? [] : [["HF_TOKEN", v]];
}

/** Appends the .env's secret lines to "$tmp": sm121's own, else the old file's ("$f"), carried over. */
export function envSecretLines(secrets: Readonly<Record<string, string>>): string[] {
  const own = new Map(envSecrets(secrets));
  return ENV_SECRET_KEYS.map((k) => {
    const v = own.get(k);
    if (v !== undefined) return `printf '%s\\n' ${quote(assignment(k, v))} >> "$tmp"`;
    return `if [ -f "$f" ]; then grep -E '^(export )?${k}=' "$f" | tail -n 1 >> "$tmp" || true; fi`;
  });
}

/**
 * After "$f" was written (a backup in "$bak" maybe): its backups are 0600, the oldest beyond
 * `keep` removed, and each kept one's lines of a secret sm121 holds rewritten to the current line.
 */
export function backupCare(secrets: Readonly<Record<string, string>>, keep: number): string {
  const own = envSecrets(secrets);
  const rewrite =
    own.length === 0
      ? []
      : [
          `  if grep -qE '^(export )?(${own.map(([k]) => k).join("|")})=' "$b"; then`,
          `    { grep -vE '^(export )?(${own.map(([k]) => k).join("|")})=' "$b" || true; ` +
            `printf '%s\\n' ${own.map(([k, v]) => quote(assignment(k, v))).join(" ")}; } > "$b.sm121-tmp"`,
          '    chmod 600 "$b.sm121-tmp"; mv "$b.sm121-tmp" "$b"',
          "  fi",
        ];
  return [
    // The stamps are UTC times of one width: name order is age order.
    `mapfile -t baks < <(ls -1d -- "$f".sm121-bak-* 2>/dev/null | sort)`,
    `for i in "\${!baks[@]}"; do b=\${baks[i]}`,
    `  if [ "$i" -lt $((\${#baks[@]} - ${keep})) ]; then rm -f -- "$b"; continue; fi`,
    '  [ -f "$b" ] || continue; chmod 600 "$b"',
    ...rewrite,
    "done",
  ].join("\n");
}

/**
 * A deployment's delete, after its stop: its state directory goes (secrets.env, the key file,
 * run.sh, logs, its registry entry), and the secret lines sm121 wrote into a script recipe's .env
 * and its backups (the lines equal to what sm121 holds; the operator's own lines stay). A directory
 * taken from another stack (`taken-from.json`, registry registerScript) is handed back instead:
 * emptied, with that stack's owner and a `displaced-by` naming this one, so its plan says so.
 */
export function forgetScript(nb: NodeBundle, secrets: Readonly<Record<string, string>>): string {
  const d = nodePath(nb.stateDir);
  const name = nb.stateDir.replace(/\/+$/, "").split("/").pop() ?? "";
  const out = [
    `if [ -f ${d}/taken-from.json ]; then`,
    `  by=null; if [ -f ${d}/owner.json ]; then IFS= read -r by < ${d}/owner.json || true; fi`,
    `  IFS= read -r prev < ${d}/taken-from.json || true`,
    `  find ${d} -mindepth 1 -delete`,
    `  printf '%s\\n' "$prev" > ${d}/owner.json`,
    `  printf '{"deployment":"%s","owner":%s}\\n' ${quote(name)} "\${by:-null}" > ${d}/displaced-by`,
    `else rm -rf -- ${d}; fi`,
  ];
  const own = envSecrets(secrets).map(([k, v]) => assignment(k, v));
  const file = envFileOf(nb);
  if (file !== undefined && own.length > 0) {
    out.push(
      `for g in ${nodePath(file.path)} ${nodePath(file.path)}.sm121-bak-*; do`,
      '  [ -f "$g" ] || continue',
      `  if grep -qxF${own.map((l) => ` -e ${quote(l)}`).join("")} -- "$g"; then`,
      `    { grep -vxF${own.map((l) => ` -e ${quote(l)}`).join("")} -- "$g" || true; } > "$g.sm121-tmp"`,
      '    chmod 600 "$g.sm121-tmp"; mv "$g.sm121-tmp" "$g"',
      "  fi",
      "done",
    );
  }
  return out.join("\n");
}

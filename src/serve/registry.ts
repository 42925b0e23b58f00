/**
 * What sm121 runs on a node, kept on the node itself: `<stateDir>/deployments/<name>/stop.sh`
 * exists while something of deployment <name> may run there. It is the deployment's exact stop
 * (with its after_stop hooks), written before every start, so that whatever takes the node next
 * (another deployment after a node move, a removal) can stop it without its recipe. A deployment
 * stopped by another one keeps `displaced-by` instead, and its own later delete leaves the node
 * alone. Hooks follow the engine: before_serve runs before every start, after_stop after every stop.
 */
import type { NodeBundle } from "../render/types";
import { t } from "../text/messages";
import { nodePath, quote, shellValue, shellWords } from "../text/shell";
import { EXIT } from "./failure";
import type { Owner } from "./owner";
import { printRecord } from "../protocol";

/** The node's directory of deployments, e.g. `~/.sm121/deployments`. */
export function deploymentsDir(nb: Pick<NodeBundle, "stateDir">): string {
  return nb.stateDir.replace(/\/[^/]+\/?$/, "");
}

/** A deployment's name from its state dir (`.../deployments/<name>`). */
export function deploymentOf(nb: Pick<NodeBundle, "stateDir">): string {
  return nb.stateDir.replace(/\/+$/, "").split("/").pop() ?? "";
}

/** Runs each hook command with bash (the command is one quoted word, never spliced into the script). */
export function hookLines(kind: "before_serve" | "after_stop", commands: readonly string[]): string {
  return commands
    .map((c) => {
      const q = quote(c);
      return (
        `echo ${quote(`${kind}: ${c}`)}\nbash -euo pipefail -c ${q} || ` +
        `{ rc=$?; echo ${quote(`sm121: the ${kind} hook \`${c}\` failed`)}" (exit $rc)" >&2; exit ${EXIT.hookFailed}; }`
      );
    })
    .join("\n");
}

/** The deployment's own stop on this node, followed by its after_stop hooks. */
export function stopWithHooks(nb: NodeBundle, afterStop: readonly string[]): string {
  return [nb.stop, hookLines("after_stop", afterStop)].filter((s) => s !== "").join("\n");
}

/**
 * Writes `stop.sh` (and, given the owner, `owner.json`) into the deployment's state dir: this node
 * now (maybe) runs it. A directory another stack owned (a takeover of a deployment of the same
 * name, SM121_ALLOW_TAKEOVER) keeps that owner in `taken-from.json`, so that this one's delete
 * hands the directory back marked as displaced (./secretfiles forgetScript).
 */
export function registerScript(nb: NodeBundle, afterStop: readonly string[], owner?: Owner): string {
  const d = nodePath(nb.stateDir);
  const text =
    "#!/usr/bin/env bash\n" +
    `# Written by sm121: how deployment ${deploymentOf(nb)} stops on this node.\n` +
    `set -euo pipefail\n${stopWithHooks(nb, afterStop)}\n`;
  return [
    `mkdir -p ${d}`,
    `printf '%s' ${quote(Buffer.from(text).toString("base64"))} | base64 -d > ${d}/stop.sh.sm121-tmp` +
      ` && mv ${d}/stop.sh.sm121-tmp ${d}/stop.sh`,
    ...(owner === undefined
      ? []
      : [
          `o=${quote(JSON.stringify(owner))}; was=`,
          `if [ -f ${d}/owner.json ]; then IFS= read -r was < ${d}/owner.json || true; fi`,
          `if [ -n "$was" ] && [ "$was" != "$o" ] && [ ! -f ${d}/taken-from.json ]; then`,
          `  printf '%s\\n' "$was" > ${d}/taken-from.json`,
          "fi",
          `printf '%s\\n' "$o" > ${d}/owner.json`,
        ]),
    `rm -f ${d}/displaced-by ${d}/stop-failed.json`,
  ].join("\n");
}

/**
 * What the node holds, as records: `{"other":"<name>"}` for every deployment but `own` that may
 * run or was served there (stop.sh or state.json), and for every deployment directory (own
 * included) `{"holder":"<name>","held":<stop.sh there>}`, its owner `{"holderOwner":"<name>",
 * "owner":{...}}` and, when another took the node, `{"displaced":"<name>","by":{...}}` (a bare
 * name in markers of earlier releases). Builtins only: the look runs on every node at every plan.
 */
export function othersProbe(dir: string, own: string | undefined): string {
  const root = nodePath(dir);
  return [
    `for d in ${root}/*/; do n=\${d%/}; n=\${n##*/}; [ -d "$d" ] || continue`,
    '  held=false; [ -f "$d/stop.sh" ] && held=true',
    `  if [ "$held" = true ] || [ -f "$d/state.json" ]; then`,
    `    [ "$n" = ${quote(own ?? "")} ] || ${printRecord("other", '"deployment":"%s"', '"$n"')}`,
    "  fi",
    `  ${printRecord("holder", '"deployment":"%s","held":%s', '"$n" "$held"')}`,
    '  if [ -f "$d/owner.json" ]; then IFS= read -r o < "$d/owner.json" || true',
    `    ${printRecord("holderOwner", '"deployment":"%s","owner":%s', '"$n" "${o:-null}"')}`,
    "  fi",
    '  if [ -f "$d/displaced-by" ]; then IFS= read -r by < "$d/displaced-by" || true',
    `    case $by in "{"*) ;; *) by="{\\"deployment\\":\\"$by\\"}";; esac`,
    `    ${printRecord("displaced", '"deployment":"%s","by":%s', '"$n" "$by"')}`,
    "  fi",
    "done",
  ].join("\n");
}

/**
 * Stops every other deployment the node holds before this one starts there (a node moved
 * between deployments), but those the site also puts on the node: runs its stored stop.sh, then
 * marks it displaced by this one (with this one's owner) and removes its secret files: nothing of
 * it runs here any more.
 */
export function displaceScript(nb: NodeBundle, owner?: Owner): string {
  const own = deploymentOf(nb);
  const root = nodePath(deploymentsDir(nb));
  const by = JSON.stringify({ deployment: own, ...(owner !== undefined && { owner }) });
  const other = shellValue("$n");
  return [
    `for d in ${root}/*/; do`,
    '  n=$(basename "$d")',
    `  [ "$n" = ${quote(own)} ] && continue`,
    // The deployments the site also puts on this node share it: they keep running.
    ...(nb.neighbors ?? []).map((k) => `  [ "$n" = ${quote(k)} ] && continue`),
    '  [ -f "$d/stop.sh" ] || [ -f "$d/state.json" ] || continue',
    `  echo ${shellWords(t("serve.displacing", { other, own }))}`,
    `  if [ -f "$d/stop.sh" ]; then bash "$d/stop.sh" || ` +
      `{ echo ${shellWords(`sm121: ${t("serve.displaceFailed", { other, own })}`)} >&2; ` +
      `exit ${EXIT.displaceFailed}; }; fi`,
    '  rm -f "$d/stop.sh" "$d/state.json" "$d/secrets.env" "$d/api-key.yaml"',
    `  printf '%s\\n' ${quote(by)} > "$d/displaced-by"`,
    `  ${printRecord("displaced", '"deployment":"%s"', '"$n"')}`,
    "done",
  ].join("\n");
}

/**
 * The deployment's delete on a node: its own stop (skipped where another deployment has taken the
 * node since), then `forget` (./secretfiles forgetScript: its directory and secrets go).
 */
export function ownStopScript(nb: NodeBundle, afterStop: readonly string[], forget: string): string {
  const d = nodePath(nb.stateDir);
  return [
    `if [ -f ${d}/displaced-by ] && [ ! -f ${d}/stop.sh ]; then`,
    // displaced-by holds `{"deployment":"<name>",...}` (a bare name in markers of earlier releases).
    `  by=$(sed -n -e 's/^{"deployment":"\\([^"]*\\)".*/\\1/p' -e t -e '/^[^{]/p' ${d}/displaced-by | head -n 1)`,
    `  echo ${shellWords(t("serve.displacedBy", { deployment: deploymentOf(nb), by: shellValue("$by") }))}`,
    "else",
    stopWithHooks(nb, afterStop).replace(/^/gm, "  "),
    "fi",
    forget,
  ].join("\n");
}

/**
 * The one shell rule for reading the API key on a node and sending it: the last `API_KEY=` line
 * of the node files that keep it (a script recipe's .env, sm121's secrets.env), later files
 * winning, read by text/assign's `sm121_get` (exactly the quoting sm121 writes, nothing else).
 * The key stays in the node's shell variable `$key`; curl gets it as a header on stdin
 * (`-H @-`, taken as it is), never on a command line and never through curl's config syntax.
 */
import { ASSIGNMENT_READER } from "../text/assign";
import { nodePath, shellValue, shellWords } from "../text/shell";
import { t } from "../text/messages";

/** Shell lines that set `$key` from the files (node paths); `''` when none has a key. */
export function readApiKeyLines(files: readonly string[]): string {
  // Said in this process's language; the node fills in the file.
  const unreadable = shellWords(t("serve.apiKeyUnreadable", { file: shellValue("$kf") }));
  return [
    ASSIGNMENT_READER,
    "key=''",
    `for kf in ${files.map(nodePath).join(" ")}; do sm121_get "$kf" API_KEY && rc=0 || rc=$?`,
    '  if [ "$rc" = 0 ] && [ -n "$REPLY" ]; then key=$REPLY; fi',
    `  if [ "$rc" = 2 ]; then echo ${unreadable} >&2; fi`,
    "done; unset REPLY",
  ].join("\n");
}

/** `curl` with the bearer header of `$key` (none when it is empty) on stdin; `args` follow. */
export function curlWithKey(args: string): string {
  return `printf '%s' "\${key:+Authorization: Bearer $key}" | curl -H @- ${args}`;
}

/**
 * The one shell rule for reading the API key on a node: the last `API_KEY=` line of the node
 * files that keep it (a script recipe's .env, sm121's secrets.env), later files winning, quotes
 * removed. The key stays in the node's shell variable `$key`: readiness, smoke, status and bench
 * hand it to curl on stdin or return it encoded, never on a command line.
 */
import { nodePath } from "../text/shell";

/** Shell lines that set `$key` from the files (node paths); `''` when none has a key. */
export function readApiKeyLines(files: readonly string[]): string {
  return [
    "key=''",
    `for kf in ${files.map(nodePath).join(" ")}; do if [ -f "$kf" ]; then k=$(sed -n 's/^API_KEY=//p' "$kf" | tail -n 1 | tr -d '"'); [ -n "$k" ] && key=$k; fi; done`,
  ].join("\n");
}

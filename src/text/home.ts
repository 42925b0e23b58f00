/**
 * `~` in a path of the machine that runs sm121 (known_hosts, a key file, the gateway file). Node
 * paths keep their `~`: the node's shell expands it (see ./shell nodePath).
 */
import { homedir } from "node:os";
import { join } from "node:path";

export function expandHome(p: string, home: string = homedir()): string {
  return p === "~" ? home : p.startsWith("~/") ? join(home, p.slice(2)) : p;
}

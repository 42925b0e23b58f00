/** Small helpers of the provider implementations. */
import { homedir } from "node:os";

export function expandHome(p: string): string {
  return p === "~" ? homedir() : p.startsWith("~/") ? `${homedir()}/${p.slice(2)}` : p;
}

/** Progress from a provider: the engine shows a provider's stderr lines under the resource. */
export function providerLog(subject: string): (message: string) => void {
  return (message) => {
    process.stderr.write(`sm121 ${subject}: ${message}\n`);
  };
}

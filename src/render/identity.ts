import { createHash } from "node:crypto";

/** The one sha256 of sm121: the hex digest of the parts in order, strings as UTF-8. */
export function sha256(...parts: ReadonlyArray<string | Uint8Array>): string {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest("hex");
}

/** JSON with sorted keys, so that identities do not depend on property order. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function identityOf(value: unknown): string {
  return sha256(canonicalJson(value));
}

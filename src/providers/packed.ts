/**
 * How a rendered bundle travels through Pulumi: one gzip+base64 string under a property key that
 * starts with `__`. Pulumi never displays such keys (the engine's IsInternalPropertyKey, as for the
 * dynamic provider's own `__provider`), so `pulumi preview --diff` shows the operator's plan
 * instead of the serialization; and one string costs the Check and Diff calls a fraction of the
 * nested object it replaces (the scripts of every node repeat, and compress ~10x). The state keeps
 * the whole bundle: delete and read still work from the stored outputs alone.
 */
import { gunzipSync, gzipSync } from "node:zlib";

export function pack(value: unknown): string {
  return gzipSync(Buffer.from(JSON.stringify(value), "utf8"), { level: 9 }).toString("base64");
}

export function unpack<T>(text: string): T {
  return JSON.parse(gunzipSync(Buffer.from(text, "base64")).toString("utf8")) as T;
}

/** A value read from JSON as text: a string as it is, a number or a boolean written out, anything else "". */
export function stringOf(v: unknown): string {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return "";
}

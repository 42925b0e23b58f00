/**
 * Terminal cells of text: East Asian wide and fullwidth characters take two (string-width measures
 * them from Unicode's East Asian Width data), so that columns stay aligned under CJK headers and
 * cells. The CLI's tables (cli/table.ts) and the program's memory-fit tables (render/memfit.ts,
 * render/nodefit.ts) measure with it.
 */
type StringWidth = typeof import("string-width");

let measure: StringWidth["default"] | undefined;

/** Terminal cells of a string. */
export function cells(s: string): number {
  // Printable ASCII takes a cell a character; other text is measured by string-width, loaded when first needed
  // (its Unicode tables are most of what a table of plain names would cost).
  if (/^[\x20-\x7e]*$/.test(s)) return s.length;
  measure ??= (require("string-width") as StringWidth).default;
  return measure(s);
}

/** `s` padded with spaces to `width` cells. */
export function pad(s: string, width: number): string {
  return s + " ".repeat(Math.max(0, width - cells(s)));
}

/** Rows under a header, columns two cells apart, each as wide as its widest cell; the last column unpadded. */
export function columns(header: readonly string[], rows: readonly string[][], indent = "  "): string[] {
  const last = header.length - 1;
  const widths = header.map((h, i) => Math.max(cells(h), ...rows.map((r) => (i === last ? 0 : cells(r[i] ?? "")))));
  const line = (r: readonly string[]) =>
    `${indent}${r.map((c, i) => (i === last ? c : pad(c, widths[i] ?? 0))).join("  ")}`;
  return [header, ...rows].map((r) => line(r).trimEnd());
}

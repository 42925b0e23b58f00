/**
 * Text that came from a node or an engine (a directory name, a model id, an answer, a log line, an
 * error body), or from what the operator wrote, as the operator's terminal may show it: every
 * control character made visible as an escape, so that no byte can move the cursor, clear the
 * screen, set the title, write the clipboard (OSC 52), ring the bell, overwrite a line (CR) or
 * reorder what is read (a bidi override). One rule, used where text leaves sm121: every message's
 * arguments (text/messages format), every line the CLI prints (cli/main), the providers' progress
 * (providers/common), and the spec errors (recipe/errors printable).
 *
 * Made visible: the control characters (Unicode Cc: C0, DEL, C1) but tab, the format characters
 * (Cf: the bidi controls, zero-width characters, the BOM) and the line and paragraph separators,
 * each as `\uXXXX`, which is also how JSON spells it: a JSON document stays the same JSON. A line
 * feed stays a line break unless `lines: false` (one line: a name, an id, an error).
 */
export function visible(text: string, o: { lines?: boolean } = {}): string {
  return text.replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, (c) =>
    c === "\t" || (c === "\n" && o.lines !== false)
      ? c
      : `\\u${(c.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}`,
  );
}

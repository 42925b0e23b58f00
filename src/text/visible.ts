/**
 * Text that came from a node or an engine (a directory name, a model id, an answer, a log line, an
 * error body), as the operator's terminal may show it: every control character made visible as an
 * escape, so that no byte a node prints can move the cursor, clear the screen, set the title,
 * write the clipboard (OSC 52), ring the bell, overwrite a line (CR) or reorder what is read
 * (bidi overrides). One function, used where text leaves sm121: every message's arguments
 * (text/messages format), the CLI's output (cli/main), the providers' progress (providers/common).
 *
 * Made visible: C0 controls but tab and line feed, DEL, C1 controls, the bidi controls (ALM, LRM,
 * RLM, LRE..RLO, LRI..PDI), the line and paragraph separators, and the BOM. Each becomes `\uXXXX`
 * (CR `\r`), which is also how JSON spells it: a JSON document stays the same JSON. Line feeds
 * stay line breaks unless `lines: false` (a one-line field: a name, an id), and tabs stay.
 */

/** Whether a code point is one this module makes visible (a line feed is decided by the caller). */
function hidden(c: number): boolean {
  if (c < 0x20) return c !== 0x09 && c !== 0x0a;
  if (c >= 0x7f && c <= 0x9f) return true;
  if (c === 0x061c || c === 0x200e || c === 0x200f || c === 0xfeff) return true;
  return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c === 0x2028 || c === 0x2029;
}

function escape(c: number): string {
  if (c === 0x0d) return "\\r";
  if (c === 0x0a) return "\\n";
  return `\\u${c.toString(16).padStart(4, "0")}`;
}

export function visible(text: string, o: { lines?: boolean } = {}): string {
  let out = "";
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!hidden(c) && !(c === 0x0a && o.lines === false)) continue;
    out += text.slice(from, i) + escape(c);
    from = i + 1;
  }
  return from === 0 ? text : out + text.slice(from);
}

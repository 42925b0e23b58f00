/**
 * One output stream of a step. Bytes are decoded as UTF-8 across chunk boundaries (a character
 * split between two chunks stays one character), split into lines, and kept whole only when the
 * caller does not stream them: a streamed run (`sm121 logs --follow`) keeps a bounded tail.
 */
import { StringDecoder } from "node:string_decoder";

/** The lines of each stream that a failed step's error shows. */
export const ERROR_TAIL_LINES = 30;
/** What a streamed run keeps of its output: enough for the error's lines. */
const TAIL_CHARS = 16 * 1024;
/** A "line" that never ends (a progress bar redrawn with \r) is passed on in pieces of this size. */
const LINE_MAX = 1 << 20;

export class OutputStream {
  private readonly decoder = new StringDecoder("utf8");
  private partial = "";
  private all: string | undefined;
  private tail = "";

  constructor(
    private readonly onLine: ((line: string) => void) | undefined,
    keep: boolean,
  ) {
    this.all = keep ? "" : undefined;
  }

  write(chunk: Buffer): void {
    this.take(this.decoder.write(chunk));
  }

  end(): void {
    this.take(this.decoder.end());
    if (this.partial !== "") this.emit();
  }

  /** Everything, or for a streamed run its last TAIL_CHARS. */
  text(): string {
    return this.all ?? this.tail;
  }

  /** The last lines that `show` keeps, for an error. */
  tailLines(show: (line: string) => boolean): string {
    const text = this.text();
    const cut = text.length > TAIL_CHARS ? text.slice(text.indexOf("\n", text.length - TAIL_CHARS) + 1) : text;
    return cut
      .replace(/\s+$/, "")
      .split("\n")
      .filter((l) => l.trim() !== "" && show(l))
      .slice(-ERROR_TAIL_LINES)
      .join("\n");
  }

  private take(s: string): void {
    if (s === "") return;
    if (this.all !== undefined) this.all += s;
    else {
      this.tail += s;
      if (this.tail.length > 2 * TAIL_CHARS) this.tail = this.tail.slice(-TAIL_CHARS);
    }
    if (this.onLine === undefined) return;
    const lines = (this.partial + s).split("\n");
    this.partial = lines.pop() ?? "";
    for (const l of lines) this.onLine(l);
    if (this.partial.length > LINE_MAX) this.emit();
  }

  private emit(): void {
    const l = this.partial;
    this.partial = "";
    this.onLine?.(l);
  }
}

/**
 * `sm121 status --watch`: the load table drawn again after every measurement (each takes
 * `--interval` seconds on the nodes), over the connections the first frame opened, in the
 * terminal's width, until Ctrl-C.
 */
import { UsageError, bool, num, type Parsed } from "./args";
import type { CliContext } from "./context";
import { t } from "../text/messages";
import { loadText, type LoadOptions } from "./load";
import type { StatusReport } from "./schemas";
import { cells } from "./table";

/** ANSI: cursor home, clear the screen. */
const CLEAR = "\u001b[H\u001b[2J";

export function loadOptions(p: Parsed, o: { yes: boolean; noHttp: boolean }): LoadOptions {
  const intervalS = num(p, "interval", 2);
  if (!(intervalS > 0 && intervalS <= 60)) throw new UsageError(t("status.badInterval", { value: String(intervalS) }));
  if (bool(p, "watch") && bool(p, "json")) throw new UsageError(t("status.watchJson"));
  return { ...o, intervalS };
}

/** The terminal's columns: the tty's, else $COLUMNS, else 100. */
export function terminalWidth(env: NodeJS.ProcessEnv = process.env): number {
  const cols = process.stdout.columns ?? Number(env["COLUMNS"]);
  return Number.isInteger(cols) && cols > 0 ? cols : 100;
}

/** One frame: a title line, then the load table fitted to `width`; a line still too wide is cut. */
export function watchFrame(r: StatusReport, width: number, at: Date): string[] {
  const lines = [
    t("status.watchTitle", { stack: r.stack, time: at.toISOString().slice(11, 19) }),
    "",
    ...loadText(r, width),
  ];
  return lines.map((l) =>
    cells(l) <= width ? l : [...l].reduce((acc, ch) => (cells(acc + ch) < width ? acc + ch : acc), "") + "…",
  );
}

export async function watchLoad(ctx: CliContext, next: () => Promise<StatusReport>): Promise<number> {
  for (;;) {
    const report = await next();
    // sm121's own escape, straight to the terminal: ctx.out shows every control character it is given.
    process.stdout.write(CLEAR);
    ctx.out(watchFrame(report, terminalWidth(), new Date()).join("\n"));
  }
}

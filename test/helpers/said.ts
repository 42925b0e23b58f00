/** What sm121 said, as a test reads it: a message in English, and a provider's lines under a resource. */
import { vi } from "vitest";
import { say, useLocale, type Locale, type Msg } from "../../src/text/messages";

/** A message in English, as a test compares it; undefined stays undefined. */
export function said(m: Msg | undefined): string | undefined {
  return m === undefined ? undefined : say(m, "en");
}

/** The lines a provider writes to stderr (what Pulumi shows under the resource) while `run` runs, in `locale`. */
export async function saidUnder(locale: Locale, run: () => Promise<unknown>): Promise<string[]> {
  useLocale(locale);
  const lines: string[] = [];
  const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk).trimEnd());
    return true;
  });
  try {
    await run();
  } finally {
    spy.mockRestore();
  }
  return lines;
}

/**
 * Temporary directories of a test file, removed when the file's tests have ended (test/setup.ts),
 * unless SM121_KEEP_SITES=1 keeps them to look at after a failure.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const made: string[] = [];

/** A new directory `<prefix>XXXXXX` in the machine's temporary directory. */
export function testDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  made.push(d);
  return d;
}

/** SM121_KEEP_SITES=1: the tests' sites and directories stay, to look at after a failure. */
export function keptForLooking(): boolean {
  return process.env["SM121_KEEP_SITES"] === "1";
}

/** Removes what testDir made so far (test/setup.ts runs it after each test file). */
export function removeTestDirs(): void {
  if (keptForLooking()) return;
  for (const d of made.splice(0)) rmSync(d, { recursive: true, force: true });
}

/**
 * The program's refusals: Pulumi's RunError, which the CLI prints as its message alone. A refusal
 * carries that message as its stack too, never the frames of where it was made. The SDK's run
 * harness still formats an uncaught error's stack for its trace span (`util.inspect` with colours),
 * and Node 22 spends some 20 s and gigabytes on one source-mapped frame of the SDK's
 * (`node_modules/@pulumi/resource.ts`, below every frame of the program) before it gives up with
 * "Invalid string length": a refused plan took half a minute. Nothing of the SDK or of Node changes;
 * the error simply has no frames to format.
 */
import { RunError } from "@pulumi/pulumi/errors";

export function refusal(message: string): RunError {
  const e = new RunError(message);
  // Set before anything reads it: V8 formats the captured frames only on the first read.
  e.stack = `${e.name}: ${message}`;
  return e;
}

/**
 * Two kinds of failure, kept apart as pulumi-command does: the host could not be reached (a
 * TransportError) or a script ran and failed (a CommandError). Both name the node and the step.
 */

export class TransportError extends Error {
  readonly node: string;
  readonly step: string;

  constructor(node: string, step: string, detail: string, fix: string) {
    super(`node ${node}: ${step}: ${detail}; ${fix}`);
    this.name = "TransportError";
    this.node = node;
    this.step = step;
  }
}

export class CommandError extends Error {
  readonly node: string;
  readonly step: string;
  readonly code: number | null;
  readonly stderrTail: string;

  constructor(node: string, step: string, code: number | null, stderr: string, hint = "") {
    const tail = tailLines(stderr, 12);
    const exit = code === null ? "was killed" : `exited with code ${code}`;
    super(`node ${node}: ${step} ${exit}${hint === "" ? "" : `; ${hint}`}${tail === "" ? "" : `\n--- stderr (last lines) ---\n${tail}`}`);
    this.name = "CommandError";
    this.node = node;
    this.step = step;
    this.code = code;
    this.stderrTail = tail;
  }
}

export function tailLines(text: string, n: number): string {
  const lines = text.replace(/\s+$/, "").split("\n");
  return lines.slice(-n).join("\n");
}

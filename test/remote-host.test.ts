/**
 * The transport's output handling, on the local host (real bash) and on the Collector both
 * transports share: UTF-8 split across chunks, records, a streamed run that keeps only a bounded
 * tail, and failures that carry how the script ended and both streams' last lines.
 */
import { describe, expect, it } from "vitest";
import { CommandError, TransportError } from "../src/remote";
import { Collector } from "../src/remote/host";
import { LocalHost } from "../src/remote/local";
import { ERROR_TAIL_LINES } from "../src/remote/output";
import { alive } from "./helpers/project";

const host = new LocalHost("n1");

describe("output decoding", () => {
  it("keeps a UTF-8 character whole when its bytes arrive in two chunks", () => {
    const lines: string[] = [];
    const c = new Collector({ step: "s", onLine: (l) => lines.push(l) });
    const euro = Buffer.from("€ and ✓\n", "utf8");
    // Cut inside the euro sign (3 bytes) and inside the check mark.
    for (const part of [euro.subarray(0, 1), euro.subarray(1, 2), euro.subarray(2, 8), euro.subarray(8)]) c.out(part);
    c.err(Buffer.from([0xe2, 0x9c]));
    c.err(Buffer.from([0x93]));
    const r = c.finish("n1", { code: 0, signal: null });
    expect(lines).toEqual(["€ and ✓"]);
    expect(r.stdout).toBe("€ and ✓\n");
    expect(r.stderr).toBe("✓");
  });

  it("collects records line by line, also the last line without a newline", async () => {
    const r = await host.run(
      `echo '@sm121 {"kind":"sent","bytes":1}'; echo plain; printf '@sm121 {"kind":"other","deployment":"\\xc3\\xa9"}'`,
      { step: "records" },
    );
    expect(r.records).toEqual([
      { kind: "sent", bytes: 1 },
      { kind: "other", deployment: "é" },
    ]);
  });

  it("fails a step whose record does not parse, naming the record, the node and the step", async () => {
    const run = (line: string, allowFailure = false) =>
      host.run(`echo ${JSON.stringify(line)}; echo done`, { step: "look", allowFailure });
    await expect(run('@sm121 {"kind":"sent","bytes":"many"}')).rejects.toThrow(
      /^node record "sent": bytes: Invalid input: expected number, received string \(n1, step look\); /,
    );
    await expect(run('@sm121 {"kind":"sent","bytes":1}', true)).resolves.toMatchObject({ code: 0 });
    await expect(run('@sm121 {"kind":"sent","bytes":"many"}', true)).rejects.toThrow(/node record "sent"/);
    await expect(run('@sm121 {"kind":"nonsense"}')).rejects.toThrow(
      /^node record "nonsense": unknown kind \(known: status, /,
    );
  });

  it("a streamed run passes every line on and keeps only a bounded tail", async () => {
    let n = 0;
    let last = "";
    const r = await host.run('for i in $(seq 1 50000); do echo "line $i of a log that has no end"; done', {
      step: "logs",
      onLine: (l) => {
        n++;
        last = l;
      },
    });
    expect(n).toBe(50_000);
    expect(last).toBe("line 50000 of a log that has no end");
    // 50,000 lines are about 1.7 MB; the result holds only the tail.
    expect(r.stdout.length).toBeLessThanOrEqual(32 * 1024);
    expect(r.stdout.endsWith("line 50000 of a log that has no end\n")).toBe(true);
  });

  it("streams stderr to onErrLine the same way", async () => {
    const err: string[] = [];
    const r = await host.run("echo one >&2; echo two >&2", { step: "logs", onErrLine: (l) => err.push(l) });
    expect(err).toEqual(["one", "two"]);
    expect(r.stderr).toBe("one\ntwo\n");
  });
});

describe("failures", () => {
  it("a non-zero exit names node, step and code, with both streams' tails and without records", async () => {
    const run = host.run(`echo '@sm121 {"key":"c2VjcmV0"}'; echo started; echo 'no space left' >&2; exit 3`, {
      step: "write",
    });
    await expect(run).rejects.toBeInstanceOf(CommandError);
    await expect(run).rejects.toMatchObject({
      message:
        "node n1: write exited with code 3\n--- stderr (last lines) ---\nno space left\n" +
        "--- stdout (last lines) ---\nstarted",
      node: "n1",
      step: "write",
      code: 3,
      signal: null,
      timedOutS: undefined,
    });
  });

  it("shows the last ERROR_TAIL_LINES lines of a long output", async () => {
    const tail = Array.from({ length: ERROR_TAIL_LINES }, (_, i) => String(101 - ERROR_TAIL_LINES + i)).join("\n");
    await expect(host.run("seq 1 100 >&2; exit 1", { step: "s" })).rejects.toMatchObject({ stderrTail: tail });
  });

  it("a timeout says so, stops what the script started, and carries both tails", async () => {
    const run = host.run('echo started; echo \'still loading\' >&2; sleep 300 & echo "@sm121 {\\"pid\\":$!}"; wait', {
      step: "readiness",
      timeoutMs: 300,
    });
    await expect(run).rejects.toBeInstanceOf(CommandError);
    await expect(run).rejects.toMatchObject({
      message:
        "node n1: readiness timed out after 0.3 s and was stopped (signal SIGKILL)\n--- stderr (last lines) ---\n" +
        "still loading\n--- stdout (last lines) ---\nstarted",
      code: null,
      signal: "SIGKILL",
      timedOutS: 0.3,
    });
  });

  it("the timeout ends the script's children too (they would hold the step open)", async () => {
    const r = await host.run('sleep 300 & echo "pid $!"; wait', { step: "wait", timeoutMs: 300, allowFailure: true });
    expect(r.code).toBeNull();
    const pid = Number(/^pid (\d+)$/m.exec(r.stdout)?.[1]);
    expect(pid).toBeGreaterThan(0);
    // Killed, it lets go of the step's pipes a moment before the kernel counts it dead: wait for that, briefly.
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 20));
    expect(alive(pid)).toBe(false);
  });

  it("a signal from elsewhere is reported as a kill, not a timeout", async () => {
    await expect(host.run("kill -TERM $$", { step: "stop" })).rejects.toMatchObject({
      message: "node n1: stop was killed by signal SIGTERM",
    });
  });

  it("a channel that ends with no exit status lost its connection: a TransportError", () => {
    const c = new Collector({ step: "readiness" });
    expect(() => c.finish("n2", { code: null, signal: null })).toThrow(TransportError);
    expect(() => new Collector({ step: "readiness" }).finish("n2", { code: null, signal: null })).toThrow(
      "node n2: readiness: the connection was lost before the step ended",
    );
  });

  it("ssh names signals without SIG; the error names them as the local host does", () => {
    expect(() => new Collector({ step: "s" }).finish("n3", { code: null, signal: "KILL" })).toThrow(
      "node n3: s was killed by signal SIGKILL",
    );
  });
});

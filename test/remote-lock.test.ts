/**
 * The node lock's channel: it holds the lock and runs the operation's steps one after another,
 * each with its own streams, records and exit code; what a step starts does not hold the lock; a
 * step out of time ends the channel; a script cut off on its way runs not at all. Over a real
 * sshd of the test site, and on real bash with the output cut into single bytes.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { CommandError, connect, hostFor, NodeBusyError, TransportError, withHosts } from "../src/remote";
import { driveSteps } from "../src/remote/held";
import { driveLock, lockScript } from "../src/remote/lock";
import type { SshAuth } from "../src/remote/ssh";
import { alive, endSite } from "./helpers/project";
import { testDir } from "./helpers/tmp";
import { startSite, type SimNode, type SimSite } from "./site/site";

const AT = allocate(__filename);

describe("the lock channel over ssh", () => {
  let site: SimSite;
  let node: SimNode;
  const auth = (): SshAuth => ({
    knownHosts: site.knownHosts,
    hostKeys: "strict",
    privateKey: readFileSync(site.clientKey, "utf8"),
    dialAttempts: 1,
    owner: "lock test",
    lockWaitS: 2,
  });
  const s1 = () => [{ node: "s1", conn: { kind: "ssh" as const, host: node.ip, port: node.sshPort, user: site.user } }];

  beforeAll(async () => {
    site = await startSite({
      dir: join(tmpdir(), `sm121-lock-site-${process.pid}`),
      nodes: ["s1"],
      ...AT.site(),
    });
    node = site.nodes[0] as SimNode;
  });
  afterAll(async () => {
    await endSite(site);
  });

  it("runs every step under the lock holder, each with its own output, records and exit code", async () => {
    await withHosts(
      s1(),
      auth(),
      async (hosts) => {
        const h = hostFor(hosts, "s1");
        // The step's parent holds the lock on fd 9; the step itself does not have it.
        const record = '@sm121 {"kind":"sent","bytes":1}';
        const a = await h.run(
          `readlink /proc/$PPID/fd/9; [ ! -e /proc/$$/fd/9 ] && echo '${record}'; printf 'no newline'`,
          { step: "one" },
        );
        expect(a.stdout).toBe(`${join(node.home, ".sm121", "node.lock")}\n${record}\nno newline`);
        expect(a.records).toEqual([{ kind: "sent", bytes: 1 }]);
        const lines: string[] = [];
        const b = h.run("echo progress; echo 'disk full' >&2; exit 3", { step: "write", onLine: (l) => lines.push(l) });
        await expect(b).rejects.toBeInstanceOf(CommandError);
        await expect(b).rejects.toHaveProperty(
          "message",
          "node s1: write exited with code 3\n--- stderr (last lines) ---\ndisk full\n" +
            "--- stdout (last lines) ---\nprogress",
        );
        expect(lines).toEqual(["progress"]);
        // Asked for at once, they run one after the other, and each gets its own output.
        const [x, y] = await Promise.all([
          h.run("sleep 0.3; echo x; echo x2 >&2", { step: "x" }),
          h.run("echo y", { step: "y" }),
        ]);
        expect([x.stdout, x.stderr, y.stdout, y.stderr]).toEqual(["x\n", "x2\n", "y\n", ""]);
      },
      { lock: true },
    );
  });

  it("a second operation says at once whom it waits for, then fails naming the holder", async () => {
    await withHosts(
      s1(),
      auth(),
      async () => {
        const said: string[] = [];
        const log = (m: string) => said.push(m);
        const second = { ...auth(), owner: "other", lockWaitS: 1 };
        const other = withHosts(s1(), second, () => Promise.resolve(undefined), { lock: true, log });
        await expect(other).rejects.toBeInstanceOf(NodeBusyError);
        await expect(other).rejects.toThrow(/^node s1 is busy: held by lock test since \d{4}-/);
        const since = String.raw`since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`;
        const waiting = new RegExp(`^s1: waiting up to 1 s for the node's lock, held by lock test ${since}$`);
        expect(said).toEqual([expect.stringMatching(waiting)]);
      },
      { lock: true },
    );
  });

  it("a run's lost connection stops its silent step, and the lock goes once nothing of the step is left", async () => {
    const h = await connect("s1", s1()[0]!.conn, auth());
    const l = h.lock("a run that dies", 60);
    await l.acquired;
    let seen: (pids: { step: number; sleep: number }) => void = () => undefined;
    const pids = new Promise<{ step: number; sleep: number }>((r) => (seen = r));
    // Silent for 300 s, and deaf to SIGTERM (its sleep too): only the end of the channel, and
    // the KILL that follows the TERM, can end it before then.
    const onLine = (line: string) => seen(JSON.parse(line) as { step: number; sleep: number });
    const script = `trap '' TERM; sleep 300 & printf '{"step":%d,"sleep":%d}\\n' $$ $!; wait`;
    const step = l.run(script, { step: "silent", onLine });
    const { step: stepPid, sleep } = await pids;
    h.close();
    await expect(step).rejects.toBeInstanceOf(TransportError);
    const taken = await withHosts(s1(), { ...auth(), lockWaitS: 20 }, () => Promise.resolve("taken"), { lock: true });
    expect(taken).toBe("taken");
    // Both got the KILL before the lock went; on a loaded machine a killed process can still be
    // on its way out for a moment. A step that outlived the lock would still be here after that.
    for (let i = 0; i < 40 && (alive(stepPid) || alive(sleep)); i++) await new Promise((r) => setTimeout(r, 50));
    expect([alive(stepPid), alive(sleep)]).toEqual([false, false]);
    expect(readFileSync(join(node.home, ".sm121", "node.lock.holder"), "utf8")).toMatch(/^lock test since /);
  });

  it("what a step starts in the background does not keep the lock after the operation", async () => {
    const pid = await withHosts(
      s1(),
      auth(),
      async (hosts) => {
        const start = 'setsid sleep 60 > /dev/null 2>&1 < /dev/null & echo "pid $!"';
        const r = await hostFor(hosts, "s1").run(start, { step: "start" });
        return Number(/^pid (\d+)$/m.exec(r.stdout)?.[1]);
      },
      { lock: true },
    );
    try {
      expect(alive(pid)).toBe(true);
      const again = await withHosts(
        s1(),
        { ...auth(), lockWaitS: 1 },
        async (hosts) => (await hostFor(hosts, "s1").run("echo locked again", { step: "s" })).stdout,
        { lock: true },
      );
      expect(again).toBe("locked again\n");
    } finally {
      process.kill(pid);
    }
  });

  it("a step out of time ends the channel: it says so, and no later step runs on it", async () => {
    await withHosts(
      s1(),
      auth(),
      async (hosts) => {
        const h = hostFor(hosts, "s1");
        const run = h.run("echo started; sleep 3", { step: "readiness", timeoutMs: 500 });
        // The site's sshd runs a forced command, which refuses signals: the channel is closed instead.
        await expect(run).rejects.toHaveProperty(
          "message",
          "node s1: readiness timed out after 0.5 s; its channel was closed without an exit status " +
            "(the node may still be running it)\n--- stdout (last lines) ---\nstarted",
        );
        await expect(h.run("echo next", { step: "verify" })).rejects.toBeInstanceOf(TransportError);
        await expect(h.run("echo next", { step: "verify" })).rejects.toThrow(
          /^node s1: verify: the node's lock channel ended before the step began; /,
        );
      },
      { lock: true },
    );
  });
});

describe("the lock channel's framing, on real bash", () => {
  const home = testDir("sm121-lock-");

  it("finds each step's end when the output arrives a byte at a time", async () => {
    const child = spawn("bash", ["-s"], { env: { ...process.env, HOME: home } });
    const bytes = (cb: (b: Buffer) => void) => (d: Buffer) => {
      for (const b of d) cb(Buffer.from([b]));
    };
    const l = driveLock(
      "n1",
      "t",
      1,
      Promise.resolve({
        write: (t: string) => void child.stdin.write(t),
        end: () => child.stdin.end(),
        kill: () => void child.kill("SIGKILL"),
        onOut: (cb: (b: Buffer) => void) => void child.stdout.on("data", bytes(cb)),
        onErr: (cb: (b: Buffer) => void) => void child.stderr.on("data", bytes(cb)),
        onClose: (cb: (code: number | null) => void) => void child.on("close", cb),
      }),
    );
    await l.acquired;
    const one = await l.run("printf 'a€'; printf '✓' >&2", { step: "one" });
    expect([one.stdout, one.stderr]).toEqual(["a€", "✓"]);
    await expect(l.run("echo '@sm121-end-0 1'; exit 4", { step: "two" })).rejects.toMatchObject({
      code: 4,
      stdoutTail: "@sm121-end-0 1",
    });
    const three = await l.run("echo three", { step: "three" });
    expect(three.stdout).toBe("three\n");
    const exited = new Promise((r) => child.on("close", r));
    l.release();
    expect(await exited).toBe(0);
  });

  it("runs the look's steps one after another on one bash, without the lock, and ends with the channel", async () => {
    const own = testDir("sm121-steps-");
    const child = spawn("bash", ["-s"], { env: { ...process.env, HOME: own } });
    const steps = driveSteps(
      "n1",
      Promise.resolve({
        write: (t: string) => void child.stdin.write(t),
        end: () => child.stdin.end(),
        kill: () => void child.kill("SIGKILL"),
        onOut: (cb: (b: Buffer) => void) => void child.stdout.on("data", cb),
        onErr: (cb: (b: Buffer) => void) => void child.stderr.on("data", cb),
        onClose: (cb: (code: number | null) => void) => void child.on("close", cb),
      }),
    );
    const [one, two] = await Promise.all([
      steps.run('echo one; echo $$ > "$HOME"/pid1', { step: "one" }),
      steps.run('echo two; echo $$ > "$HOME"/pid2', { step: "two" }),
    ]);
    expect([one.stdout, two.stdout]).toEqual(["one\n", "two\n"]);
    await expect(steps.run("exit 3", { step: "three" })).rejects.toMatchObject({ code: 3 });
    // Each step in a shell of its own (its own $$), all under the one bash; no lock was taken.
    expect(readFileSync(join(own, "pid1"), "utf8")).not.toBe(readFileSync(join(own, "pid2"), "utf8"));
    expect(existsSync(join(own, ".sm121", "node.lock"))).toBe(false);
    const exited = new Promise((r) => child.on("close", r));
    steps.close();
    expect(await exited).toBe(0);
  });

  it("a script cut off on its way runs not at all", () => {
    const frame = 'echo ran > "$HOME"/ran\n';
    const r = spawnSync("bash", ["-s"], {
      input: `${lockScript("t", 1, "@sm121-end-test")}${frame.length + 40}\n${frame}`,
      env: { ...process.env, HOME: home },
      encoding: "utf8",
    });
    expect(r.stderr).toContain("sm121: a script arrived cut off; none of it ran");
    expect(r.status).toBe(65);
    expect(existsSync(join(home, "ran"))).toBe(false);
  });
});

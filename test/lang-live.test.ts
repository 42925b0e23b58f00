/**
 * What sm121 prints while it works, in Russian and Japanese: the errors of a node it cannot reach,
 * of a step that failed there, of a busy node and of a refused host key (each carrying its message,
 * which a catch site can store and say again in another locale), and the progress lines of a copy,
 * a drain, and the node scripts' own lines, said here and expanded by bash on the node.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { CommandError, NodeBusyError, TransportError } from "../src/remote";
import { dialFailure, transportFix } from "../src/remote/errors";
import { verifyHostKey } from "../src/remote/knownhosts";
import { meter, rateText } from "../src/serve/fanout";
import { receiverScript } from "../src/serve/modelcache";
import { memGateScript } from "../src/serve/steps";
import { say, t, useLocale, type Msg } from "../src/text/messages";
import { shellValue, shellWords } from "../src/text/shell";

afterEach(() => useLocale("en"));

const dir = mkdtempSync(join(tmpdir(), "sm121-lang-live-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A refused dial to spark1, as ssh2 reports it (Node's error, its code), in the locale of the moment. */
function refusedDial(): TransportError {
  const err = Object.assign(new Error("connect ECONNREFUSED 203.0.113.12:22"), { code: "ECONNREFUSED" });
  const f = dialFailure(err, "ops@203.0.113.12:22");
  return new TransportError("spark1", "connect", f.detail, transportFix(f.kind, "spark1"), f.kind);
}

/** A stored message comes back as JSON: plain data, said again in any locale. */
const stored = (m: Msg): Msg => JSON.parse(JSON.stringify(m)) as Msg;

describe("remote errors in the operator's language", () => {
  it("an unreachable node: the node, the cause and the fix in Russian, ssh2's own words as they were", () => {
    useLocale("ru");
    const e = refusedDial();
    expect(e.message).toBe(
      "узел spark1: connect: в соединении с ops@203.0.113.12:22 отказано (connect ECONNREFUSED 203.0.113.12:22); " +
        "проверьте, что sshd запущен на spark1 и слушает ssh.port",
    );
    expect(e.kind).toBe("refused");
    // Stored and said again: the same words in Russian, and English or Japanese from the same message.
    expect(say(stored(e.said))).toBe(e.message);
    expect(say(stored(e.said), "en")).toBe(
      "node spark1: connect: connection to ops@203.0.113.12:22 refused (connect ECONNREFUSED 203.0.113.12:22); " +
        "check that sshd runs on spark1 and listens on ssh.port",
    );
    useLocale("ja");
    expect(say(stored(e.said))).toBe(refusedDial().message);
    expect(refusedDial().message).toContain("ops@203.0.113.12:22 への接続が拒否されました");
  });

  it("a failed step in Japanese: the heading translated, what the node printed kept byte for byte", () => {
    useLocale("ja");
    const stderr = "docker: Error response from daemon: No such image: vllm:x.";
    const e = new CommandError({
      node: "spark2",
      step: "start",
      exit: { code: 125, signal: null },
      stdout: "",
      stderr,
    });
    expect(e.message).toBe(`ノード spark2: start がコード 125 で終了しました\n--- stderr（最後の行） ---\n${stderr}`);
    expect(e.code).toBe(125);
    expect(e.stderrTail).toBe(stderr);
    expect(say(stored(e.said), "ru")).toBe(
      `узел spark2: start завершился с кодом 125\n--- stderr (последние строки) ---\n${stderr}`,
    );
    const late = new CommandError({
      node: "spark2",
      step: "readiness",
      exit: { code: null, signal: null },
      timedOutS: 960,
      stdout: "",
      stderr: "",
    });
    expect(late.message).toBe(
      "ノード spark2: readiness が 960 秒でタイムアウトしました。終了ステータスなしでチャネルが閉じられました" +
        "（ノードではまだ実行中の可能性があります）",
    );
  });

  it("a busy node in Russian names its holder, or says that another operation holds it", () => {
    useLocale("ru");
    const e = new NodeBusyError("spark1", "stack prod (ci@runner-b, pid 4242)", 60);
    expect(e.message).toBe(
      "узел spark1 занят: его держит stack prod (ci@runner-b, pid 4242); ожидание 60 с. " +
        "Запустите снова, когда он освободится",
    );
    expect(e.holder).toBe("stack prod (ci@runner-b, pid 4242)");
    expect(new NodeBusyError("spark1", "", 60).message).toContain("его держит другая операция;");
  });

  it("a changed host key in Russian and Japanese: the fingerprints and the ssh-keygen line to clear it", () => {
    const key = (name: string) => {
      const file = join(dir, name);
      const made = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", file], { encoding: "utf8" });
      expect(made.status, made.stderr).toBe(0);
      return readFileSync(`${file}.pub`, "utf8").trim();
    };
    const [a, b] = [key("a"), key("b")];
    const kh = join(dir, "known_hosts");
    writeFileSync(kh, `[203.0.113.12]:2222 ${a.split(" ").slice(0, 2).join(" ")}\n`);
    const blob = Buffer.from(b.split(" ")[1] ?? "", "base64");
    const v = verifyHostKey(kh, "203.0.113.12", 2222, blob, "strict");
    if (v.ok) throw new Error("a changed key was accepted");
    expect(v.refusal.status).toBe("changed");
    useLocale("ru");
    const ru = say(v.reason);
    expect(ru).toContain("ключ хоста ssh-ed25519 для [203.0.113.12]:2222 ИЗМЕНИЛСЯ");
    expect(ru).toContain(v.refusal.fingerprint);
    expect(ru).toContain(`\`ssh-keygen -R '[203.0.113.12]:2222' -f ${kh}\``);
    expect(say(v.reason, "ja")).toContain("ホスト鍵が変わりました");
  });
});

describe("progress lines in the operator's language", () => {
  afterEach(() => vi.useRealTimers());

  it("a copy's bytes, rate and ETA in Russian and Japanese", async () => {
    vi.useFakeTimers();
    useLocale("ru");
    const lines: string[] = [];
    let done = 0;
    const stop = meter(
      t("copy.to", { node: "spark2" }),
      () => Promise.resolve(done),
      4 * 1024 ** 3,
      (m) => lines.push(m),
      10,
    );
    done = 1024 ** 3;
    await vi.advanceTimersByTimeAsync(10_000);
    useLocale("ja");
    await vi.advanceTimersByTimeAsync(10_000);
    stop();
    expect(lines[0]).toMatch(/^.+spark2: 1\.0 GiB из 4\.0 GiB за 10 с \(102\.4 MiB\/с, осталось ≈30 с\)$/);
    expect(lines[1]).toMatch(/^.+spark2.*: 1\.0 GiB \/ 4\.0 GiB、20 秒（51\.2 MiB\/秒、残り約 60 秒）$/);
    expect(rateText(3 * 1024 ** 2, 1500)).toBe("3.0 MiB、1.5 秒（2.0 MiB/秒）");
  });

  it("a drain's waits with Russian plural forms", () => {
    useLocale("ru");
    const waits = (count: number) => t("serve.drainWaits", { count, waited: 3, seconds: 30 });
    expect(waits(1)).toBe("ждёт завершения 1 запроса в работе (3 с из не более 30 с)");
    expect(waits(5)).toBe("ждёт завершения 5 запросов в работе (3 с из не более 30 с)");
  });

  it("a node script prints the message said here, with the node's own values expanded by bash", () => {
    useLocale("ru");
    // No node has that much memory, and no time to wait: the gate says so at once, and fails.
    const r = spawnSync("bash", ["-c", memGateScript(1_000_000, 0)], { encoding: "utf8" });
    expect(r.status).toBe(3);
    expect(r.stdout).toMatch(/^ожидание до 0 с, пока MemAvailable не достигнет 1000000 ГиБ \(сейчас \d+ ГиБ\)\n/);
    expect(r.stderr).toMatch(/^sm121: MemAvailable равна \d+ ГиБ через 0 с, ниже порога 1000000 ГиБ; /);
  });

  it("a model copy's receiver refuses a record it does not know in Japanese, naming it", () => {
    useLocale("ja");
    const r = spawnSync("bash", ["-c", receiverScript(join(dir, "repo"))], { input: "x a b c\n", encoding: "utf8" });
    expect(r.status).toBe(3);
    expect(r.stderr).toBe("sm121: コピーのレコードを拒否しました: 種類 x\n");
  });

  it("a said text reaches the node as one word: its own quotes and dollars stay text, its values expand", () => {
    const word = shellWords(`it's "$HOME" \`x\` \\ ${shellValue("$((6 * 7))")} ${shellValue("$v")}`);
    const r = spawnSync("bash", ["-c", `v='a b'; printf '%s\\n' ${word}`], { encoding: "utf8" });
    expect(r.stdout).toBe('it\'s "$HOME" `x` \\ 42 a b\n');
  });
});

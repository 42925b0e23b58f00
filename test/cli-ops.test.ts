/**
 * `sm121 smoke`, `logs`, `bench <deployment>` and `doctor` on the simulated site after a real
 * `pulumi up`: the protected-node rules, logs prefixed and followed until Ctrl-C with nothing left
 * on the node, a benchmark with the key read on the node, and doctor with an unknown host key and
 * a missing engine binary. Every --json output is checked against its schema.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { benchSchema, smokeSchema } from "../src/cli/schemas";
import { doctorSchema } from "../src/cli/doctorschema";
import { API_KEY, json, servedSite, sm121, stackYaml, type CliSite } from "./cli-helpers";
import { sshScript } from "./site/exec";
import type { SimNode } from "./site/site";
import { containing, matching } from "./helpers/json";
import { machineWedgeFacts } from "./helpers/machine";

const AT = allocate(__filename);

let s: CliSite;

beforeAll(async () => {
  s = await servedSite("cliops", AT.site());
}, 300_000);

afterAll(() => s?.e.stop());

async function sh(n: SimNode, script: string): Promise<string> {
  return (await sshScript(s.e.site, n, script)).stdout;
}

/** A node's address as a regular expression. */
const ipPattern = (n: SimNode) => n.ip.replace(/\./g, "\\.");

const chats = () => sh(s.nodes[0], "docker logs sm121-solo-0 2>&1 | grep -c 'POST /v1/chat/completions' || true");

describe("sm121 smoke", () => {
  it("sends one chat completion on the node and prints the latency and the answer", async () => {
    const r = await sm121(s.e, ["smoke", "--node", "spark2"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      new RegExp(
        `^flash on spark2 \\(http://${ipPattern(s.nodes[1])}:8000/v1/chat/completions\\): ` +
          "HTTP 200 in [\\d.]+ ms \\(first byte after [\\d.]+ ms\\)$",
        "m",
      ),
    );
    expect(r.stdout).toMatch(/^ {2}answer: This is a simulated answer from vllm serving qwen38 on spark2\./m);
    const j = smokeSchema().parse(json(await sm121(s.e, ["smoke", "--node", "spark3", "--json"])));
    expect(j).toMatchObject({
      node: "spark3",
      ok: true,
      results: [{ deployment: "small", model: "qwen3-small", ok: true, httpCode: 200, error: null }],
    });
    expect(j.results[0]?.latencyMs).toBeGreaterThan(0);
    expect(j.results[0]?.completionTokens).toBeGreaterThan(0);
  });

  it("refuses a protected node without --yes (no request reaches it), and sends one with --yes", async () => {
    const before = await chats();
    const r = await sm121(s.e, ["smoke", "--node", "spark1"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/node spark1 is protected \(it serves live traffic\): smoke refuses it without --yes/);
    expect(await chats()).toBe(before);
    const yes = smokeSchema().parse(json(await sm121(s.e, ["smoke", "--node", "spark1", "--yes", "--json"])));
    expect(yes.results[0]).toMatchObject({ deployment: "solo", ok: true, answer: containing("qwen3-8b on spark1") });
    expect(Number(await chats())).toBe(Number(before) + 1);
  });

  it("no --node: the named deployment's API node; with several deployments and none named, it asks which", async () => {
    const r = await sm121(s.e, ["smoke"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "sm121 smoke: name the deployment to smoke (or its node with --node N); deployments: solo, flash, small\n",
    );
    const small = await sm121(s.e, ["smoke", "small"]);
    expect(small.code, small.stderr).toBe(0);
    expect(small.stdout).toMatch(/^small on spark3 \(http:\/\/[\d.]+:8000\/v1\/chat\/completions\): HTTP 200/m);
  });
});

describe("sm121 logs", () => {
  it("prints the engine log of each target, every line prefixed with the node", async () => {
    for (const [d, node, marker] of [
      ["solo", "spark1", "GPU KV cache size"],
      ["flash", "spark2", "Application startup complete."],
      ["small", "spark3", "Application startup complete."],
    ] as const) {
      const r = await sm121(s.e, ["logs", d, "--lines", "40"]);
      expect(r.code, r.stderr).toBe(0);
      const lines = r.stdout.trimEnd().split("\n");
      expect(lines.length).toBeGreaterThan(3);
      expect(lines.length).toBeLessThanOrEqual(40);
      for (const l of lines) expect(l.startsWith(`${node} | `)).toBe(true);
      expect(r.stdout).toContain(marker);
    }
    const three = await sm121(s.e, ["logs", "small", "--lines", "3"]);
    expect(three.stdout.trimEnd().split("\n")).toHaveLength(3);
  });

  it("--follow streams new lines until Ctrl-C, and leaves no follower on the node", async () => {
    const n3 = s.nodes[2];
    let child: import("node:child_process").ChildProcess | undefined;
    let seen = "";
    const waitFor = async (re: RegExp) => {
      for (let i = 0; i < 100 && !re.test(seen); i++) await new Promise((r) => setTimeout(r, 100));
      expect(seen).toMatch(re);
    };
    const run = sm121(s.e, ["logs", "small", "--follow", "--lines", "1"], {
      onSpawn: (c) => (child = c),
      onStdout: (out) => (seen = out),
    });
    await waitFor(/^spark3 \| /m);
    await sh(n3, `curl -s http://${n3.ip}:8000/version > /dev/null`);
    await waitFor(/^spark3 \| INFO: +\S+ - "GET \/version HTTP\/1\.1" 200$/m);
    expect(await sh(n3, "pgrep -f 'tail -n 1 -F' || true")).not.toBe("");
    child?.kill("SIGINT");
    const r = await run;
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain("@sm121");
    for (let i = 0; i < 30 && (await sh(n3, "pgrep -f 'tail -n 1 -F' || true")) !== ""; i++)
      await new Promise((res) => setTimeout(res, 100));
    expect(await sh(n3, "pgrep -f 'tail -n 1 -F' || true")).toBe("");
  });

  it("masks the secrets sm121 keeps on the node, and an engine's api_key=..., in every line it prints", async () => {
    // What real SGLang prints at start, and a line with the .env's key itself, into the container's log.
    const say = (text: string) => `docker exec qwen38-flash sh -c 'printf "%s\\n" "${text}" > /proc/1/fd/1'`;
    await sh(
      s.nodes[1],
      [say("server_args=ServerArgs(host=0.0.0.0, api_key=sk-other-42, port=8000)"), say(`using ${API_KEY}`)].join("\n"),
    );
    const r = await sm121(s.e, ["logs", "flash", "--lines", "2"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      "spark2 | server_args=ServerArgs(host=0.0.0.0, api_key=****, port=8000)\nspark2 | using ****\n",
    );
  });

  it("shows an engine's control characters visible: a clipboard write (OSC 52), a bell, a CR", async () => {
    // printf's own escapes make the bytes in the container: ESC ] 52 ; c ; <base64> BEL, then CR.
    const hostile = "docker exec qwen38-flash sh -c 'printf \"\\033]52;c;cHduZWQ=\\007 done\\rok\\n\" > /proc/1/fd/1'";
    await sh(s.nodes[1], hostile);
    const r = await sm121(s.e, ["logs", "flash", "--lines", "1"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("spark2 | \\u001B]52;c;cHduZWQ=\\u0007 done\\u000Dok\n");
  });

  it("names the deployments when the one asked for does not exist", async () => {
    const r = await sm121(s.e, ["logs", "nope"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no deployment "nope" in Pulumi\.sim\.yaml; deployments: solo, flash, small/);
  });
});

describe("sm121 bench", () => {
  it("loads a deployment's endpoint with the key read on the node: counts, errors, percentiles", async () => {
    const r = await sm121(s.e, [
      "bench",
      "flash",
      "--requests",
      "200",
      "--concurrency",
      "8",
      "--max-tokens",
      "16",
      "--prompt-tokens",
      "32",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const b = benchSchema().parse(json(r));
    expect(b).toMatchObject({
      deployment: "flash",
      urls: [`http://${s.nodes[1].ip}:8000`],
      model: "qwen38",
      requests: 200,
      completed: 200,
      errors: 0,
      errorSamples: [],
      outputTokens: 200 * 16,
    });
    for (const l of [b.ttftMs, b.itlMs, b.e2eMs]) {
      expect(l.min).toBeLessThanOrEqual(l.p50);
      expect(l.p50).toBeLessThanOrEqual(l.p90);
      expect(l.p90).toBeLessThanOrEqual(l.p99);
      expect(l.p99).toBeLessThanOrEqual(l.max);
    }
    expect(b.ttftMs.count).toBe(200);
    expect(b.e2eMs.count).toBe(200);
    expect(b.itlMs.count).toBe(200 * 15);
    expect(b.ttftMs.p50).toBeLessThanOrEqual(b.e2eMs.p50);
    expect(b.requestsPerS).toBeGreaterThan(0);
    expect(b.outputTokensPerS).toBeCloseTo(b.requestsPerS * 16, -1);
  });

  it("refuses to load a protected node without --yes", async () => {
    const before = await chats();
    const r = await sm121(s.e, ["bench", "solo", "--requests", "5"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/protected node\(s\) spark1: bench refuses to load them without --yes/);
    expect(await chats()).toBe(before);
    const yes = await sm121(s.e, ["bench", "solo", "--requests", "5", "--concurrency", "2", "--yes"]);
    expect(yes.code, yes.stderr).toBe(0);
    expect(yes.stdout).toMatch(/requests: 5 ok, 0 errors/);
    expect(Number(await chats())).toBe(Number(before) + 5);
  });

  it("benches any OpenAI endpoint with --url, finding the model itself", async () => {
    const r = await sm121(s.e, [
      "bench",
      "--url",
      `http://${s.nodes[2].ip}:8000`,
      "--requests",
      "50",
      "--concurrency",
      "4",
      "--max-tokens",
      "8",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(benchSchema().parse(json(r))).toMatchObject({
      deployment: null,
      model: "qwen3-small",
      completed: 50,
      errors: 0,
    });
  });
});

describe("sm121 doctor", () => {
  it("finds every node ready after up", async () => {
    const r = await sm121(s.e, ["doctor", "--json"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const d = doctorSchema().parse(json(r));
    expect(d.ok).toBe(true);
    const checks = (node: string) =>
      d.nodes.find((n) => n.node === node)?.checks.map((c) => `${c.check} ${c.subject} ${String(c.ok)}`);
    // Up's own preflight passes on each node ("ready" means that), besides what doctor checks itself;
    // its warnings (no checkpoint in the HF cache yet) and a fit that cannot be known are warnings, not ok.
    const login = (node: string) => {
      const n = s.e.site.nodes.find((x) => x.name === node) as SimNode;
      return `login ${s.e.site.user}@${n.ip}:${n.sshPort} true`;
    };
    // What makes a node wedge: this machine's swap and OOM killer (every node's), the host's /dev/shm
    // where a docker deployment runs, the sim's vm.watermark_scale_factor of 10.
    const m = machineWedgeFacts();
    const wedge = (docker: boolean) => [
      `wedge swap ${String(!m.swap)}`,
      `wedge oom-killer ${String(m.oomKiller)}`,
      ...(docker ? ["wedge /dev/shm true"] : []),
      "wedge vm.watermark_scale_factor true",
    ];
    expect(checks("spark1")).toEqual([
      login("spark1"),
      "command curl true",
      "sudo sudo -n true true",
      "command docker true",
      "image nvcr.io/nvidia/vllm:26.01-py3 true",
      "memory MemAvailable true",
      ...wedge(true),
      "preflight solo true",
      "preflight solo false",
      "memory-fit solo false",
    ]);
    expect(checks("spark3")).toEqual([
      login("spark3"),
      "command curl true",
      "sudo sudo -n true true",
      "command tmux true",
      "engine vllm true",
      "memory MemAvailable true",
      ...wedge(false),
      "preflight small true",
      "preflight small false",
      "memory-fit small false",
    ]);
    // The fit reads each node's MemTotal and the checkpoint; one that stays unknown is said in words.
    expect(d.memoryFit.map((f) => f.deployment)).toEqual(expect.arrayContaining(["solo", "small"]));
    const text = await sm121(s.e, ["doctor"]);
    expect(text.stdout).toMatch(/doctor: every node is ready/);
    expect(text.stdout).toMatch(/^login: \S+, in this order \(the program, pulumi up and every sm121 command/m);
    expect(text.stdout).toMatch(/^memory fit of solo is unknown: /m);
  });

  it("reports an unknown host key per node with its fingerprint and how to accept it", async () => {
    const empty = join(s.e.dir, "empty_known_hosts");
    writeFileSync(empty, "");
    writeFileSync(join(s.e.dir, "Pulumi.nokeys.yaml"), stackYaml(s.e.site, { knownHosts: empty }));
    const r = await sm121(s.e, ["doctor", "--stack", "nokeys", "--json"]);
    expect(r.code).toBe(1);
    const d = doctorSchema().parse(json(r));
    expect(d.ok).toBe(false);
    for (const n of d.nodes) {
      expect(n).toMatchObject({
        reachable: false,
        problems: 1,
        connect: { kind: "host-key", fingerprint: matching(/^SHA256:[A-Za-z0-9+/]{43}$/) },
      });
      const node = s.e.site.nodes.find((x) => x.name === n.node) as SimNode;
      expect(n.connect?.fix).toBe(`ssh-keyscan -p ${node.sshPort} ${node.ip} >> ${empty}`);
    }
    const text = await sm121(s.e, ["doctor", "--stack", "nokeys", "--node", "spark2"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^spark2: 1 problem$/m);
    expect(text.stdout).toMatch(/the host key the node presented: SHA256:/);
    expect(text.stdout).toContain(
      `after checking that fingerprint on the node: ssh-keyscan -p ${s.nodes[1].sshPort} ${s.nodes[1].ip} >> `,
    );
  });

  it("reports a missing engine binary with the driver's install hint", async () => {
    writeFileSync(
      join(s.e.dir, "recipes", "sglang-native-missing.toml"),
      'engine = "sglang"\ndeploy = "native"\nmodel = "Qwen/Qwen3-0.6B"\n' +
        'entrypoint = ["/opt/sglang-venv/bin/python3", "-m", "sglang.launch_server"]\nport = 30000\n',
    );
    writeFileSync(
      join(s.e.dir, "Pulumi.broken.yaml"),
      stackYaml(s.e.site, { spark3Deployment: "{ name: sg, recipe: sglang-native-missing, nodes: [spark3] }" }),
    );
    const r = await sm121(s.e, ["doctor", "--stack", "broken", "--json"]);
    expect(r.code).toBe(1);
    const d = doctorSchema().parse(json(r));
    const n3 = d.nodes.find((n) => n.node === "spark3");
    expect(n3?.problems).toBe(1);
    expect(n3?.checks.find((c) => !c.ok)).toEqual({
      check: "engine",
      subject: "/opt/sglang-venv/bin/python3",
      ok: false,
      severity: "problem",
      detail: "missing",
      hint: containing('pip install "sglang[all]"'),
      deployments: ["sg"],
    });
    expect(d.nodes.filter((n) => n.node !== "spark3").every((n) => n.problems === 0)).toBe(true);
    const text = await sm121(s.e, ["doctor", "--stack", "broken", "--node", "spark3"], { env: { SM121_LANG: "de" } });
    expect(text.stdout).toMatch(/\[FAIL\] engine \/opt\/sglang-venv\/bin\/python3: fehlt/);
    expect(text.stdout).toMatch(/Abhilfe: pip install "sglang\[all\]"/);
  });
});

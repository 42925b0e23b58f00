/**
 * What the program, the providers and `sm121 doctor --fabric` print at run time, in another
 * language (--lang / SM121_LANG set the process's locale; useLocale is what --lang calls): the
 * memory-fit tables stay aligned in terminal cells under Japanese and Chinese headers, the link
 * test report and the fabric's refusals read in German and Russian, the gateway's warnings and
 * restart note in German while the file and its plan stay byte for byte the English ones.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { gatewayFile, type GatewayModel } from "../src/gateway/file.render";
import { gatewayPlan } from "../src/gateway/plan.render";
import { deploymentFits, fitLines } from "../src/render/memfit";
import { fitRefusal } from "../src/render/fitrefusal";
import { nodeBudgets, nodeLines } from "../src/render/nodefit";
import { judgeFabric } from "../src/fabric/resolve.serve";
import type { FabricFacts } from "../src/fabric/look.render";
import { linkTestText, type LinkTestReport } from "../src/fabric/linkrun.serve";
import { judgeLinkTest, parseLinkTest } from "../src/fabric/nccl.render";
import { msg, say, useLocale } from "../src/text/messages";
import { cells } from "../src/text/width";

const ROOT = join(__dirname, "..");

afterEach(() => useLocale("en"));

/** Where each column of a table line starts, in terminal cells (columns are two or more spaces apart). */
function starts(line: string): number[] {
  const out: number[] = [];
  for (const m of line.matchAll(/(?<=^|\s{2})\S/g)) out.push(cells(line.slice(0, m.index)));
  return out;
}

const SITE = [
  "config:",
  "  sm121:nodes:",
  "    spark1: { host: local, ip: 203.0.113.1 }",
  "  sm121:deployments:",
  "    - { name: a, recipe: a, nodes: [spark1] }",
  "    - { name: b, recipe: b, nodes: [spark1] }",
  "",
].join("\n");
const recipe = (file: string, util: string, port: number) =>
  parseRecipe(
    file,
    [
      'model = "Qwen/Qwen3-32B"',
      'image = "nvcr.io/nvidia/vllm:26.01-py3"',
      "tp = 1",
      `port = ${port}`,
      `args = ["--max-model-len", "32768", "--max-num-seqs", "8", "--gpu-memory-utilization", "${util}"]`,
      "[memory]",
      "weights_gb = 65.5",
      "num_hidden_layers = 64",
      "num_key_value_heads = 8",
      "head_dim = 128",
      'torch_dtype = "bfloat16"',
    ].join("\n"),
  );
const recipes = new Map([
  ["a", recipe("recipes/a.toml", "0.45", 8000)],
  ["b", recipe("recipes/b.toml", "0.4", 8001)],
]);
const fits = () => {
  return deploymentFits(renderSite(parseSite("Pulumi.s.yaml", "s", SITE), recipes, { root: ROOT }), recipes, {});
};

describe("the memory-fit tables in another language", () => {
  it("says the deployment's table in Japanese, each column starting at the same cell on every line", () => {
    useLocale("ja");
    const [a] = fits();
    if (a === undefined) throw new Error("no fit");
    const lines = fitLines(a.fit);
    expect(lines[0]).toMatch(/^a のメモリ適合: Qwen\/Qwen3-32B（vllm）、tp 1、max_model_len 32768/);
    const table = lines.slice(3, 5);
    expect(table[0]).toBe(
      "  ノード  メモリ            予算      重み      KV キャッシュ              オーバーヘッド  必要量    判定",
    );
    expect(table[1]).toMatch(/^ {2}spark1 .* 8\.0 GiB x1、64\.0 GiB 全体 .* 拒否 \(完全シーケンス 0\)$/);
    expect(lines[5]).toBe("  拒否: 73.0 GiB 必要で、予算 54.8 GiB を超えます");
    for (const l of table) expect(starts(l)).toEqual(starts(table[0] ?? ""));
    // The same table in English keeps its ASCII layout.
    useLocale("en");
    const english =
      "  NODE    MEMORY            BUDGET    WEIGHTS   KV CACHE                  OVERHEAD  NEED      " + "VERDICT";
    expect(fitLines(a.fit)[3]).toBe(english);
  });

  it("says the per-node budget and its verdict in Chinese, aligned under the headers", () => {
    useLocale("zh");
    const lines = nodeLines(nodeBudgets(fits()));
    expect(lines[0]).toBe("每节点内存：每个部署的占用（其利用率 x MemTotal），合计至多 MemTotal 的 0.9");
    expect(lines[1]).toMatch(/^ {2}节点 +内存 +占用 +合计 +结论$/);
    expect(lines[2]).toMatch(/可容纳（上限 109\.5 GiB）$/);
    for (const l of lines.slice(2)) expect(starts(l)).toEqual(starts(lines[1] ?? ""));
  });

  it("says a refusal in German with the numbers and the English names of flags and files", () => {
    useLocale("de");
    const [a] = fits();
    if (a === undefined) throw new Error("no fit");
    const text = fitRefusal(a.fit, "recipes/a.toml") ?? "";
    expect(text).toMatch(/^Deployment a passt nicht in den Speicher \(Qwen\/Qwen3-32B\): spark1: Gewichte /);
    expect(text).toContain("--gpu-memory-utilization");
    expect(text).toContain("= 73.0 GiB pro Knoten > 54.8 GiB (0.45 x 121.7 GiB MemTotal, --gpu-memory-utilization)");
    expect(text).toMatch(/lässt SM121_ALLOW_UNFIT=spark1 diesen Lauf weitergehen$/);
  });
});

const fixture = (f: string) => readFileSync(join(__dirname, "fixtures", "fabric", f), "utf8");

function report(minimum: number): LinkTestReport {
  const output = parseLinkTest(`${fixture("nccl-tests-gb10-roce.txt")}\n${fixture("nccl-info-ib-roce.txt")}`);
  const failures = judgeLinkTest(output, { rdma: true, minBusBandwidthGBps: minimum });
  const path = "/opt/nccl-tests/all_reduce_perf";
  const tool = { kind: "all_reduce_perf" as const, path, why: msg("link.whyMpi", { path }) };
  return {
    deployment: "glm",
    nodes: ["spark1", "spark2"],
    tool,
    rdma: true,
    minimum,
    ranks: [],
    output,
    failures,
    failedRanks: [],
    ok: failures.length === 0,
  };
}

describe("the link test report in another language", () => {
  it("reads in German: labels, verdict and fix; the table's numbers right-aligned under the headers", () => {
    useLocale("de");
    const lines = linkTestText(report(1000));
    expect(lines[0]).toBe("Verbindungstest von glm auf spark1, spark2: NCCL-All-Reduce, 2 Ranks");
    expect(lines[1]).toMatch(/^ {2}Werkzeug {6}all_reduce_perf von nccl-tests unter mpirun/);
    expect(lines[2]).toMatch(/^ {2}Transport {5}NET\/IB/);
    // The header and the four sizes of the fixture.
    const table = lines.slice(3, 8);
    expect(table).toHaveLength(5);
    expect(table[0]).toBe("       Größe   busbw (GB/s)   in-place");
    // Right-aligned: every column ends at the same cell.
    const ends = (l: string) => {
      return [...l.matchAll(/\S+(?: \(GB\/s\))?/g)].map((m) => cells(l.slice(0, (m.index ?? 0) + m[0].length)));
    };
    for (const l of table) expect(ends(l)).toEqual(ends(table[0] ?? ""));
    const failed = /^ {2}FEHLGESCHLAGEN \(busbw [\d.]+ GB\/s bei 64K, Minimum 1000 GB\/s\):$/;
    expect(lines.some((l) => failed.test(l))).toBe(true);
    expect(lines.at(-1)).toMatch(/unter sm121:fabric\.minBusBandwidthGBps 1000\. Abhilfe: nennen Sie beide RoCE-Ports/);
  });

  it("keeps the English report's layout", () => {
    const lines = linkTestText(report(0.5));
    expect(lines[1]).toMatch(/^ {2}tool {8}nccl-tests' all_reduce_perf under mpirun/);
    expect(lines[3]).toBe("        size   busbw (GB/s)   in-place");
    expect(lines.at(-1)).toMatch(/^ {2}ok: NET\/IB, busbw [\d.]+ GB\/s at 64K, minimum 0.5 GB\/s$/);
  });
});

describe("the fabric's refusals in another language", () => {
  const site = parseSite(
    "Pulumi.t.yaml",
    "t",
    [
      "config:",
      "  sm121:nodes:",
      "    a: { host: local, ip: 192.168.100.11, fabric: { interface: enp1s0f1np1, rdma: [{ hca: rocep1s0f1 }] } }",
      "    b: { host: local, ip: 192.168.100.12, fabric: { interface: enp1s0f1np1, rdma: none } }",
      "  sm121:deployments:",
      "    - { recipe: r, nodes: [a, b] }",
      "",
    ].join("\n"),
  );
  const facts = (ip: string, over: Partial<FabricFacts> = {}): FabricFacts => ({
    addrs: [{ iface: "enp1s0f1np1", address: ip, prefix: 24 }],
    links: [{ iface: "enp1s0f1np1", up: true }],
    rdma: [],
    ibdev: [],
    gids: [],
    devices: ["uverbs0"],
    memlock: "unlimited",
    ...over,
  });

  it("names the node and the fix in Russian, the commands and fields as they are", () => {
    useLocale("ru");
    const d = { name: "r", deploy: "tmux" as const, nodes: ["a", "b"] };
    const a = facts("192.168.100.11", { links: [{ iface: "enp1s0f1np1", up: false }] });
    const j = judgeFabric(site, [d], { a, b: facts("192.168.100.12") });
    expect(j.refusals).toEqual([
      "a: связь enp1s0f1np1 не поднята; подключите кабель или выполните `sudo ip link set enp1s0f1np1 up` на a",
      "a: HCA rocep1s0f1 порт 1 на узле нет (rdma link show: нет); " +
        "исправьте sm121:nodes.a.fabric.rdma (ibdev2netdev перечисляет порты узла)",
    ]);
  });
});

describe("the gateway's words in another language", () => {
  const failed: GatewayModel = {
    deployment: "flash",
    model: "qwen38",
    status: "failed",
    endpoints: [{ node: "spark1", url: "http://203.0.113.1:8000", reachable: true }],
  };

  it("warns and notes in German; the file and its plan stay the English ones", () => {
    const en = gatewayFile("sm121", [failed], { apiKey: false });
    const planEn = gatewayPlan("sm121", "/etc/gw.json", [failed]);
    useLocale("de");
    const de = gatewayFile("sm121", [failed], { apiKey: false });
    expect(de.warnings).toEqual([
      "Modell qwen38: kein Endpunkt ist nutzbar (das Deployment ist failed); " +
        "spark1 bleibt aktiviert, damit das Gateway die Konfiguration annimmt",
    ]);
    expect(say(de.restartNote)).toMatch(/^das Gateway liest seine Konfiguration nur beim Start: .*PULSE_QWEN_BACKENDS/);
    expect(de.text).toBe(en.text);
    expect(gatewayPlan("sm121", "/etc/gw.json", [failed])).toBe(planEn);
    expect(planEn).toContain("warning model qwen38: no endpoint is usable (the deployment is failed)");
  });
});

/**
 * A recipe's `args` read by the engines' own parsing rules: owned options are refused under every
 * spelling the real parser maps onto them, and what the real parser refuses is refused here first.
 * The expected outcomes come from the real parsers (vLLM 0.33.0, SGLang 0.5.23), recorded by
 * scripts/engine-options/outcomes.py in test/fixtures/engine-options/.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { said } from "./helpers/said";
import { DRIVERS } from "../src/engines";
import { canonical, SGLANG_OPTIONS, VLLM_OPTIONS, type OptionTable } from "../src/engines/options/table";
import { SpecErrors } from "../src/recipe/errors";
import { parseRecipe } from "../src/engines/recipes";

interface Outcome {
  args: string[];
  dests?: string[];
  error?: string;
}

const outcomes = (engine: string): Outcome[] =>
  JSON.parse(
    readFileSync(join(__dirname, "fixtures", "engine-options", `${engine}-outcomes.json`), "utf8"),
  ) as Outcome[];
const ENGINES = [
  { engine: "vllm" as const, table: VLLM_OPTIONS, cases: outcomes("vllm") },
  { engine: "sglang" as const, table: SGLANG_OPTIONS, cases: outcomes("sglang") },
];

/** The options a driver refuses as owned: those whose plain spelling with a value is "set by sm121". */
function ownedDests(engine: "vllm" | "sglang", table: OptionTable): Map<string, string> {
  const out = new Map<string, string>();
  for (const o of table.options) {
    const name = canonical(o);
    const args = o.nargs === 0 ? [name] : [name, o.choices?.find((c) => c !== "mp") ?? "1"];
    if ([...DRIVERS[engine].checkArgs(args)].some((p) => p.index === 0 && p.problem.key === "spec.args.owned"))
      out.set(o.dest, name);
  }
  return out;
}

function recipeErrors(engine: string, args: string[]): string[] {
  const text = `engine = "${engine}"\nmodel = "Q/q"\nimage = "i/e:1"\nport = 8000\nargs = ${JSON.stringify(args)}\n`;
  try {
    parseRecipe("recipes/t.toml", text);
    return [];
  } catch (e) {
    if (e instanceof SpecErrors) return e.errors.map((x) => x.message);
    if (e instanceof Error) return [e.message];
    throw e;
  }
}

describe("the spellings of the issue are refused, naming the canonical flag and the field", () => {
  const cases: Array<[string, string[], string, string]> = [
    ["vllm", ["--tensor_parallel_size", "1"], "--tensor-parallel-size", "set `tp` instead"],
    ["vllm", ["--node_rank", "0"], "--node-rank", "derives it from the deployment's nodes"],
    ["vllm", ["--master_addr", "10.0.0.1"], "--master-addr", "derives it from rank 0's ip"],
    ["vllm", ["--tensor-parallel", "1"], "--tensor-parallel-size", "set `tp` instead"],
    ["vllm", ["--served-model", "other"], "--served-model-name", "set `served_model_name` instead"],
    ["vllm", ["--head"], "--headless", "adds it on vLLM ranks above 0"],
    ["vllm", ["-n", "1"], "--nnodes", "derives it from the deployment's nodes"],
    ["vllm", ["-r", "0"], "--node-rank", "derives it from the deployment's nodes"],
    ["vllm", ["--data-parallel-size", "2"], "--data-parallel-size", "data parallelism would change that layout"],
    ["vllm", ["-tp=2"], "--tensor-parallel-size", "set `tp` instead"],
    ["vllm", ["--port=8001"], "--port", "set `port` instead"],
    ["vllm", ["--distributed-executor-backend", "ray"], "--distributed-executor-backend", "mp backend only"],
    ["sglang", ["--dist-init", "10.0.0.1:5000"], "--dist-init-addr", "derives it from rank 0's ip"],
    ["sglang", ["--nccl-init-addr", "10.0.0.1:5000"], "--dist-init-addr", "derives it from rank 0's ip"],
    ["sglang", ["--dp", "2"], "--dp-size", "data parallelism would change that layout"],
    ["sglang", ["--tp", "2"], "--tp-size", "set `tp` instead"],
    ["sglang", ["--tensor-parallel-size", "2"], "--tp-size", "set `tp` instead"],
    ["sglang", ["--api-key", "k"], "--api-key", "a Pulumi secret; a flag would show it in argv"],
    ["sglang", ["--config", "x.yaml"], "--config", "its own --config file"],
  ];
  it.each(cases)("%s %j", (engine, args, flag, field) => {
    const [message, ...more] = recipeErrors(engine, args);
    expect(more).toEqual([]);
    expect(message).toMatch(/^recipes\/t\.toml:5:9: args\[0\]: /);
    expect(message).toMatch(new RegExp(`(: ${flag}|reads it as ${flag}\\)) is set by sm121; remove it \\(`));
    expect(message).toContain(field);
  });

  it("lets vLLM's mp backend through: it is the one sm121's multi-node launch uses", () => {
    expect([...DRIVERS.vllm.checkArgs(["--distributed-executor-backend", "mp"])]).toEqual([]);
  });
});

describe.each(ENGINES)(
  "$engine: every spelling the real parser maps onto an owned option",
  ({ engine, table, cases }) => {
    const owned = ownedDests(engine, table);
    // One owned option per case; vLLM's executor backend counts with any value but "mp".
    const spellings = cases.filter(
      (c) =>
        c.dests !== undefined &&
        c.dests.length === 1 &&
        owned.has(c.dests[0] ?? "") &&
        !c.args.some((a) => a === "mp" || a.endsWith("=mp")),
    );

    it("covers at least 60 spellings, with underscore (vLLM), abbreviation, alias and = forms", () => {
      expect(spellings.length).toBeGreaterThanOrEqual(60);
      const first = spellings.map((c) => c.args[0] ?? "");
      expect(first.some((a) => a.includes("="))).toBe(true);
      expect(first.some((a) => !a.includes("=") && !table.options.some((o) => o.spellings.includes(a)))).toBe(true);
      if (engine === "vllm") expect(first.some((a) => a.includes("_"))).toBe(true);
    });

    it("has recorded spellings for every option the driver owns (regenerate the outcomes when it owns more)", () => {
      // Recorded: the real parser's outcome for the option's own spelling (vLLM's serve turns --model into an error).
      const recorded = new Set(cases.map((c) => (c.args[0] ?? "").split("=")[0]));
      expect([...owned.values()].filter((flag) => !recorded.has(flag))).toEqual([]);
    });

    it("refuses each one at its token, naming the canonical flag", () => {
      for (const c of spellings) {
        const dest = c.dests?.find((d) => owned.has(d)) ?? "";
        const problems = [...DRIVERS[engine].checkArgs(c.args)];
        expect(problems[0]?.index, c.args.join(" ")).toBe(0);
        expect(said(problems[0]?.problem), c.args.join(" ")).toContain(`${owned.get(dest) ?? "?"}`);
        expect(said(problems[0]?.problem), c.args.join(" ")).toContain("is set by sm121");
      }
    });

    it("matches the real parser on each recorded case: refused exactly when it errs or sets an owned option", () => {
      // The executor backend is owned but for the value "mp"; its own test above covers both.
      for (const c of cases.filter((x) => !(x.dests ?? []).includes("distributed_executor_backend"))) {
        const refused = [...DRIVERS[engine].checkArgs(c.args)].length > 0;
        const expected = c.error !== undefined || (c.dests ?? []).some((d) => owned.has(d));
        expect(refused, `${c.args.join(" ")} -> ${c.error ?? (c.dests ?? []).join(",")}`).toBe(expected);
      }
    });
  },
);

describe("what the engines would refuse is refused before it reaches a node", () => {
  it("an unknown option, with the nearest real one", () => {
    expect(
      [...DRIVERS.vllm.checkArgs(["--max-model-length", "4096"])].map((p) => ({
        index: p.index,
        problem: said(p.problem),
        fix: said(p.fix),
      })),
    ).toEqual([
      {
        index: 0,
        problem: "--max-model-length is not an option of vllm serve 0.33.0",
        fix: "did you mean --max-model-len?",
      },
    ]);
    expect(said([...DRIVERS.sglang.checkArgs(["--context-lenght", "4096"])][0]?.fix)).toBe(
      "did you mean --context-length?",
    );
  });

  it("an ambiguous abbreviation, with what it could match", () => {
    const [p, ...more] = DRIVERS.vllm.checkArgs(["--max-num", "8"]);
    expect(more).toEqual([]);
    expect(said(p?.problem)).toBe(
      "--max-num is ambiguous for vllm serve 0.33.0: it could match --max-num-batched-tokens, " +
        "--max-num-scheduled-tokens, --max-num-seqs, --max-num-active-seqs, --max-num-queued-reqs, " +
        "--max-num-queued-tokens",
    );
    expect(said(p?.fix)).toBe("write the option in full");
  });

  it("a missing value, and an invalid choice with the choices", () => {
    expect(said([...DRIVERS.vllm.checkArgs(["--max-model-len"])][0]?.problem)).toBe(
      "--max-model-len: expected one argument",
    );
    const [bad] = DRIVERS.vllm.checkArgs(["--dtype", "fp9"]);
    expect(said(bad?.problem)).toBe("--dtype: invalid choice: 'fp9'");
    expect(said(bad?.fix)).toBe("use one of auto, bfloat16, float, float16, float32, half");
  });

  it("a stray positional argument", () => {
    expect([...DRIVERS.sglang.checkArgs(["--context-length", "4096", "8192"])].map((p) => p.index)).toEqual([2]);
  });

  it("lets real options through, values that look negative included", () => {
    expect([
      ...DRIVERS.vllm.checkArgs([
        "--max-model-len",
        "32768",
        "--enable-prefix-caching",
        "--seed",
        "-1",
        "--gpu-memory-utilization=0.8",
      ]),
    ]).toEqual([]);
    expect([
      ...DRIVERS.sglang.checkArgs(["--context-length", "65536", "--mem-fraction-static", "0.8", "--nccl-port", "5000"]),
    ]).toEqual([]);
  });
});

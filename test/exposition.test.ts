/**
 * Prometheus' text exposition format, read as Prometheus reads it: the inputs and refusals of
 * Prometheus' own parser tests (model/textparse/promparse_test.go: TestPromParse,
 * TestUTF8PromParse, TestPromParseErrors), the values an engine may print (NaN, ±Inf, exponents),
 * and the one signal sm121 reads of it (seriesSum): unknown where a value is no finite number.
 */
import { describe, expect, it } from "vitest";
import { parseExposition, seriesSum, type Exposition, type Sample } from "../src/engines/exposition";

const samples = (text: string): Sample[] => {
  const e = parseExposition(text);
  if (!e.ok) throw new Error(`line ${e.line}: ${e.error}`);
  return e.samples;
};
const one = (text: string): Sample => samples(text)[0] as Sample;

describe("parseExposition", () => {
  it("reads Prometheus' own test input: blanks, trailing commas, comments, HELP without text, timestamps", () => {
    const text = [
      "# HELP go_gc_duration_seconds A summary of the GC invocation durations.",
      "# \tTYPE go_gc_duration_seconds summary",
      'go_gc_duration_seconds{quantile="0"} 4.9351e-05',
      'go_gc_duration_seconds{quantile="0.25",} 7.424100000000001e-05',
      'go_gc_duration_seconds{quantile="0.8", a="b"} 8.3835e-05',
      "# Hrandom comment starting with prefix of HELP",
      "#",
      "# comment with escaped \\n newline",
      "# HELP nohelp1",
      "# HELP nohelp2 ",
      'go_gc_duration_seconds { quantile = "2.0" a = "b" } 8.3835e-05',
      'some:aggregate:rate5m{a_b="c"}\t1',
      "go_goroutines 33  \t123123",
      "_metric_starting_with_underscore 1",
      'testmetric{label="\\"bar\\""} 1',
      'null_byte_metric{a="abc\u0000"} 1',
      "",
    ].join("\n");
    const s = samples(text);
    expect(s.map((x) => [x.name, x.labels, x.value])).toEqual([
      ["go_gc_duration_seconds", { quantile: "0" }, 4.9351e-5],
      ["go_gc_duration_seconds", { quantile: "0.25" }, 7.424100000000001e-5],
      ["go_gc_duration_seconds", { quantile: "0.8", a: "b" }, 8.3835e-5],
      ["go_gc_duration_seconds", { quantile: "2.0", a: "b" }, 8.3835e-5],
      ["some:aggregate:rate5m", { a_b: "c" }, 1],
      ["go_goroutines", {}, 33],
      ["_metric_starting_with_underscore", {}, 1],
      ["testmetric", { label: '"bar"' }, 1],
      ["null_byte_metric", { a: "abc\u0000" }, 1],
    ]);
    expect(s[5]?.timestampMs).toBe(123123);
  });

  it("reads quoted names (UTF-8) inside the braces, and label values with their escapes", () => {
    expect(one('{"go.gc_duration_seconds",quantile="0.25",} 7.4e-05')).toEqual({
      name: "go.gc_duration_seconds",
      labels: { quantile: "0.25" },
      value: 7.4e-5,
    });
    const odd = one('{"a \\"b\\" {c\\nd}","strange©\\n\\"name\\""="6"} 10.0');
    expect(odd).toEqual({ name: 'a "b" {c\nd}', labels: { 'strange©\n"name"': "6" }, value: 10 });
    expect(one('m{path="C:\\\\x\\ty"} 1').labels).toEqual({ path: "C:\\x\\ty" });
  });

  it("reads values as Go's ParseFloat: NaN, +Inf, -Inf, Infinity in any case, exponents", () => {
    const v = (x: string) => one(`m ${x}`).value;
    expect(v("NaN")).toBeNaN();
    expect(v("nan")).toBeNaN();
    expect([v("+Inf"), v("-Inf"), v("inf"), v("Infinity"), v("-INFINITY")]).toEqual([
      Infinity,
      -Infinity,
      Infinity,
      Infinity,
      -Infinity,
    ]);
    expect([v("1e3"), v("-2.5E-2"), v(".5"), v("5."), v("+7"), v("1e-400")]).toEqual([1000, -0.025, 0.5, 5, 7, 0]);
    // A value may follow the braces or a name that cannot go on.
    expect(one('m{a="b"}1').value).toBe(1);
    expect(one("m+Inf").value).toBe(Infinity);
  });

  it("refuses what Prometheus refuses, naming the line: the whole exposition is then unread", () => {
    const bad = [
      "a",
      "a{b='c'} 1",
      "a{b=",
      'a{b="c"',
      "a true",
      'empty_label_name{="" } 0',
      "foo 1_2",
      "foo 0x1p-3",
      "foo 0x10",
      "foo -nan",
      "foo 1e400",
      "foo 0 1_2",
      "foo 0 1 2",
      '{a="ok"} 1',
      '{"a", "b = "c"} 1',
      "# TYPE #",
      "# HELP #",
      "# TYPE foo countr",
      'a\u0000{b="ddd"} 1',
    ];
    for (const b of bad) {
      const e = parseExposition(`ok 1\n${b}\n`);
      expect(e.ok, JSON.stringify(b)).toBe(false);
      expect((e as Extract<Exposition, { ok: false }>).line).toBe(2);
    }
  });
});

describe("seriesSum", () => {
  const text = [
    "# TYPE vllm:request_success_total counter",
    'vllm:request_success_total{finished_reason="stop"} 4',
    'vllm:request_success_total{finished_reason="abort"} 2',
    'vllm:generation_tokens_total{model_name="m"} NaN',
    'vllm:prompt_tokens_total{model_name="m"} +Inf',
    'vllm:num_requests_running{model_name="m"} 1',
    'vllm:num_requests_running{model_name="n"} 2',
  ].join("\n");
  const e = parseExposition(text);

  it("adds a series over its label sets, those `keep` keeps", () => {
    expect(seriesSum(e, "vllm:num_requests_running")).toBe(3);
    expect(seriesSum(e, "vllm:request_success_total", (l) => l["finished_reason"] !== "abort")).toBe(4);
  });

  it("is unknown where a value is no finite number, absent where there is no sample", () => {
    expect(seriesSum(e, "vllm:generation_tokens_total")).toBe("unknown");
    expect(seriesSum(e, "vllm:prompt_tokens_total")).toBe("unknown");
    expect(seriesSum(e, "sglang:num_requests_total")).toBe("absent");
    expect(seriesSum(parseExposition("m{\n"), "m")).toBe("unknown");
  });
});

/**
 * The site read from Pulumi's resolved configuration: values as Pulumi hands them to a program
 * (objects as JSON, scalars as text), and each error placed where the value in force was written:
 * the stack file, Pulumi.yaml's project config, or Pulumi's configuration (an ESC environment,
 * --config-file) when neither file holds it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { siteFrom } from "../src/recipe/site";
import { pulumiConfigOrigin, pulumiConfigSource } from "../src/recipe/siteSource";
import { useLocale } from "../src/text/messages";
import { errorsOf as rejected } from "./helpers/spec";

const STACK = `config:
  sm121:memTimeoutS: 30
  sm121:nodes:
    spark1:
      ssh: { host: 203.0.113.1, user: ops }
      ip: 203.0.113.1
`;
const PROJECT = `name: sm121
config:
  sm121:lockWaitS:
    default: 20
  sm121:rollback: auto
`;
const docs = { stack: { file: "Pulumi.s.yaml", text: STACK }, project: { file: "Pulumi.yaml", text: PROJECT } };
/** What Pulumi hands the program for that stack and project (objects as JSON with sorted keys). */
const resolved: Record<string, string> = {
  "sm121:memTimeoutS": "30",
  "sm121:nodes": '{"spark1":{"ip":"203.0.113.1","ssh":{"host":"203.0.113.1","user":"ops"}}}',
  "sm121:lockWaitS": "20",
  "sm121:rollback": "auto",
  "sm121:sshPrivateKey": "a secret never read as a site value",
  "other:key": "x",
};
const site = (config: Record<string, string>) => siteFrom(pulumiConfigSource(config, "Pulumi.s.yaml", docs), "s");

describe("the site from Pulumi's resolved configuration", () => {
  afterEach(() => useLocale("en"));
  it("reads every sm121: value, project defaults included", () => {
    const s = site(resolved);
    expect(s.memTimeoutS).toBe(30);
    expect(s.lockWaitS).toBe(20);
    expect(s.rollback).toBe("auto");
    expect(s.nodes["spark1"]?.ssh).toEqual({ host: "203.0.113.1", port: 22, user: "ops" });
  });

  it("places an error in the stack file, in Pulumi.yaml, or names Pulumi's configuration", () => {
    const bad = (k: string, v: string) => rejected(() => site({ ...resolved, [k]: v }));
    // The value in force is the stack file's: its line.
    expect(
      bad("sm121:nodes", '{"spark1":{"ip":"203.0.113.1","ssh":{"host":"203.0.113.1","user":"ops"},"gpuprobe":"x"}}'),
    ).toEqual([`${pulumiConfigOrigin()}: sm121:nodes.spark1.gpuprobe: unknown key; did you mean gpuProbe?`]);
    expect(
      rejected(() =>
        siteFrom(
          pulumiConfigSource(
            {
              ...resolved,
              "sm121:memTimeoutS": "30",
              "sm121:nodes": '{"spark1":{"ip":"203.0.113.300","ssh":{"host":"203.0.113.1","user":"ops"}}}',
            },
            "Pulumi.s.yaml",
            { ...docs, stack: { file: "Pulumi.s.yaml", text: STACK.replace("ip: 203.0.113.1", "ip: 203.0.113.300") } },
          ),
          "s",
        ),
      ),
    ).toEqual([
      "Pulumi.s.yaml:6:7: sm121:nodes.spark1.ip: is not an IPv4 address; " +
        "write the node's address on the cluster network, e.g. 203.0.113.12",
    ]);
    // Pulumi.yaml's default (`default:` form) and short form.
    expect(
      rejected(() =>
        siteFrom(
          pulumiConfigSource({ ...resolved, "sm121:lockWaitS": "-1" }, "Pulumi.s.yaml", {
            ...docs,
            project: { file: "Pulumi.yaml", text: PROJECT.replace("default: 20", "default: -1") },
          }),
          "s",
        ),
      ),
    ).toEqual(["Pulumi.yaml:4:5: sm121:lockWaitS: is below 0; use at least 0"]);
    expect(
      rejected(() =>
        siteFrom(
          pulumiConfigSource({ ...resolved, "sm121:rollback": "sideways" }, "Pulumi.s.yaml", {
            ...docs,
            project: { file: "Pulumi.yaml", text: PROJECT.replace("rollback: auto", "rollback: sideways") },
          }),
          "s",
        ),
      ),
    ).toEqual(['Pulumi.yaml:5:3: sm121:rollback: "sideways" is not allowed; use one of "off", "auto"']);
    // In neither file: an ESC environment or --config-file.
    expect(bad("sm121:hostKeys", "loose")).toEqual([
      `${pulumiConfigOrigin()}: sm121:hostKeys: "loose" is not allowed; use one of "strict", "accept-new"`,
    ]);
  });

  it("names Pulumi's configuration in the reader's language", () => {
    useLocale("ru");
    const [line] = rejected(() => site({ ...resolved, "sm121:hostKeys": "loose" }));
    expect(line).toMatch(/^конфигурация стека в Pulumi \(окружение ESC или --config-file\): sm121:hostKeys: /);
  });

  it("reads the files only to place an error: a valid site never parses them", () => {
    const reads: string[] = [];
    const counted = (file: string, text: string) => ({
      file,
      get text() {
        reads.push(file);
        return text;
      },
    });
    const lazyDocs = {
      stack: counted("Pulumi.s.yaml", STACK.replace("ip: 203.0.113.1", "ip: 203.0.113.300")),
      project: counted("Pulumi.yaml", PROJECT),
    };
    const source = (config: Record<string, string>) => pulumiConfigSource(config, "Pulumi.s.yaml", lazyDocs);
    expect(siteFrom(source(resolved), "s").memTimeoutS).toBe(30);
    expect(reads).toEqual([]);
    const bad = {
      ...resolved,
      "sm121:nodes": '{"spark1":{"ip":"203.0.113.300","ssh":{"host":"203.0.113.1","user":"ops"}}}',
    };
    expect(rejected(() => siteFrom(source(bad), "s"))).toEqual([
      "Pulumi.s.yaml:6:7: sm121:nodes.spark1.ip: is not an IPv4 address; " +
        "write the node's address on the cluster network, e.g. 203.0.113.12",
    ]);
    expect(reads).toContain("Pulumi.s.yaml");
  });
});

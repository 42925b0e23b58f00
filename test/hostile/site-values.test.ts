/**
 * The site beyond metacharacters: YAML that is broken or hostile (alias bombs, tags, prototype
 * keys), wrong types, node env values of the wrong kind, URLs and probes with line breaks, and
 * paths with leading dashes, `~user`, `..` or an absolute path where a relative one is meant.
 */
import { describe, expect, it } from "vitest";
import { parseSite } from "../../src/recipe/site";
import { LINE_BREAKERS, PAYLOADS, rejected, yamlStr } from "./helpers";
import { ONE_NODE } from "../helpers/spec";

const F = "Pulumi.s.yaml";
const bad = (text: string): string[] => rejected(() => parseSite(F, "s", text), F);
const SYNTAX = "fix the syntax at this spot";
const PATH_RULE = "may contain only letters, digits and ~ @ : / . _ + -; remove spaces, quotes and shell characters";
const DASH = 'starts with "-"; a leading dash would be read as a flag';
const TILDE =
  "starts with ~user, which the node does not expand; write ~/ for the node user's home or an absolute path";
const DOTS = 'contains a ".." segment; use a path without ..';

type Case = [title: string, text: string, messages: string[]];

describe("YAML that is broken or hostile", () => {
  const bomb = [
    "config:",
    "  a: &a [x, x, x, x, x, x, x, x, x]",
    "  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
    "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
    "  d: [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
    "  sm121:nodes: {}",
    "",
  ].join("\n");
  const cases: Case[] = [
    [
      "an alias bomb (billion laughs)",
      bomb,
      [
        `${F}:3:10: YAML: Excessive alias count indicates a resource exhaustion attack; ` +
          `write the values out instead of aliases`,
      ],
    ],
    [
      "tabs for indentation",
      "config:\n\tsm121:nodes: {}\n",
      [`${F}:2:1: YAML syntax: Tabs are not allowed as indentation; ${SYNTAX}`],
    ],
    [
      "an unclosed quote",
      `${ONE_NODE}      stateDir: "~/x\n`,
      [`${F}:7:1: YAML syntax: Missing closing "quote; ${SYNTAX}`],
    ],
    [
      "sm121:nodes written twice",
      `${ONE_NODE}  sm121:nodes: {}\n`,
      [`${F}:6:3: YAML syntax: Map keys must be unique; ${SYNTAX}`],
    ],
    [
      "a key that is a flow map",
      `${ONE_NODE}  { a: 1 }: x\n`,
      [`${F}:6:3: YAML syntax: Map comment with trailing content; ${SYNTAX}`],
    ],
    [
      "an undefined alias",
      `${ONE_NODE}      stateDir: *nowhere\n`,
      [
        `${F}:6:17: YAML: Unresolved alias (the anchor must be set before the alias): nowhere; ` +
          `write the values out instead of aliases`,
      ],
    ],
    [
      "a binary tag",
      `${ONE_NODE}  sm121:recipesDir: !!binary aGVsbG8=\n`,
      [`${F}:6:3: sm121:recipesDir: expected string, got Buffer; write a string`],
    ],
    [
      "a node named __proto__",
      "config:\n  sm121:nodes:\n    __proto__: { host: local, ip: 203.0.113.1 }\n",
      [`${F}:3:5: sm121:nodes.__proto__: __proto__ is not a name sm121 accepts; rename the key`],
    ],
    [
      "a config key sm121:__proto__",
      `${ONE_NODE}  sm121:__proto__:\n    recipesDir: /etc\n`,
      [`${F}:6:3: sm121:__proto__: __proto__ is not a name sm121 accepts; rename the key`],
    ],
    [
      "a deployment on node constructor",
      `${ONE_NODE}  sm121:deployments:\n    - { recipe: r, nodes: [constructor] }\n`,
      [
        `${F}:7:28: sm121:deployments[0].nodes[0]: node "constructor" is not in sm121:nodes; ` +
          `add it to sm121:nodes or use one of spark1`,
      ],
    ],
    [
      "a gateway on node constructor",
      `${ONE_NODE}  sm121:gateway: { path: ~/gw.json, node: constructor }\n`,
      [
        `${F}:6:37: sm121:gateway.node: node "constructor" is not in sm121:nodes; name a node of the site, ` +
          `or remove node to write the file on the machine that runs Pulumi`,
      ],
    ],
    ["a document that is a list", "- config\n", [`${F}:1:1: sm121:nodes: is required; add it (record)`]],
    ["an empty file", "", [`${F}:1:1: sm121:nodes: is required; add it (record)`]],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
});

describe("wrong types", () => {
  const cases: Case[] = [
    [
      "nodes as a string",
      "config:\n  sm121:nodes: spark1\n",
      [`${F}:2:3: sm121:nodes: expected record, got string; write a record`],
    ],
    [
      "deployments as a map",
      `${ONE_NODE}  sm121:deployments: { recipe: r }\n`,
      [`${F}:6:3: sm121:deployments: expected array, got object; write an array`],
    ],
    [
      "a node that is null",
      "config:\n  sm121:nodes:\n    spark1:\n",
      [`${F}:3:5: sm121:nodes.spark1: expected object, got null; write an object`],
    ],
    [
      "an ssh port with a shell suffix",
      ONE_NODE.replace("user: ops }", 'user: ops, port: "22;id" }'),
      [`${F}:4:44: sm121:nodes.spark1.ssh.port: expected number, got string; write a number`],
    ],
    [
      "an ssh port of 70000",
      ONE_NODE.replace("user: ops }", "user: ops, port: 70000 }"),
      [`${F}:4:44: sm121:nodes.spark1.ssh.port: is above 65535; use at most 65535`],
    ],
    [
      "protected as yes",
      `${ONE_NODE}      protected: yes\n`,
      [`${F}:6:7: sm121:nodes.spark1.protected: expected boolean, got string; write a boolean`],
    ],
    [
      "memTimeoutS of -1",
      `${ONE_NODE}  sm121:memTimeoutS: -1\n`,
      [`${F}:6:3: sm121:memTimeoutS: must be above 0; use a number above 0`],
    ],
    [
      "minMemAvailableGiB as a word",
      `${ONE_NODE}  sm121:minMemAvailableGiB: lots\n`,
      [`${F}:6:3: sm121:minMemAvailableGiB: expected number, got string; write a number`],
    ],
    [
      "a node env PORT that is no port",
      `${ONE_NODE}      env: { PORT: http }\n`,
      [`${F}:6:14: sm121:nodes.spark1.env.PORT: PORT is not a TCP port; write a number from 1 to 65535, e.g. 8000`],
    ],
    [
      "a node env PORT of 99999",
      `${ONE_NODE}      env: { PORT: 99999 }\n`,
      [`${F}:6:14: sm121:nodes.spark1.env.PORT: PORT is not a TCP port; write a number from 1 to 65535, e.g. 8000`],
    ],
    [
      "a node env PORT of -1",
      `${ONE_NODE}      env: { PORT: -1 }\n`,
      [`${F}:6:14: sm121:nodes.spark1.env.PORT: PORT is not a TCP port; write a number from 1 to 65535, e.g. 8000`],
    ],
    [
      "a node env BIND that is a host name",
      `${ONE_NODE}      env: { BIND: spark1 }\n`,
      [
        `${F}:6:14: sm121:nodes.spark1.env.BIND: BIND is not an IPv4 address; write the address the server binds, ` +
          `e.g. 127.0.0.1 or 0.0.0.0`,
      ],
    ],
    [
      "a relative node env HF_HOME",
      `${ONE_NODE}      env: { HF_HOME: .cache/hf }\n`,
      [
        `${F}:6:14: sm121:nodes.spark1.env.HF_HOME: HF_HOME is neither an absolute path nor ~/...; ` +
          `write the node's Hugging Face cache, e.g. ~/.cache/huggingface (the node expands ~) or ` +
          `/home/ops/.cache/huggingface`,
      ],
    ],
    [
      "a node env HF_HOME that is a flag",
      `${ONE_NODE}      env: { HF_HOME: -rf }\n`,
      [
        `${F}:6:14: sm121:nodes.spark1.env.HF_HOME: HF_HOME is neither an absolute path nor ~/...; ` +
          `write the node's Hugging Face cache, e.g. ~/.cache/huggingface (the node expands ~) or ` +
          `/home/ops/.cache/huggingface`,
      ],
    ],
    [
      "a node env HF_HOME under ~user (the node expands only ~/)",
      `${ONE_NODE}      env: { HF_HOME: ~ops/.cache/hf }\n`,
      [
        `${F}:6:14: sm121:nodes.spark1.env.HF_HOME: HF_HOME is neither an absolute path nor ~/...; ` +
          `write the node's Hugging Face cache, e.g. ~/.cache/huggingface (the node expands ~) or ` +
          `/home/ops/.cache/huggingface`,
      ],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
});

describe("gatewayUrl", () => {
  const url = (u: string) => `${ONE_NODE}      gatewayUrl: ${yamlStr(u)}\n`;
  const NOT_URL = `${F}:6:7: sm121:nodes.spark1.gatewayUrl: is not a URL; write e.g. http://203.0.113.12:8000`;
  const UNSEEN =
    `${F}:6:7: sm121:nodes.spark1.gatewayUrl: contains white space, ` +
    `a control character or a non-ASCII character; write the URL without them (e.g. http://203.0.113.12:8000)`;
  it.each(LINE_BREAKERS)("refuses %s (the gateway file is YAML for LiteLLM)", (_title, payload) => {
    expect(bad(url(`http://203.0.113.1:8000/${payload}`))).toEqual([UNSEEN]);
  });
  const cases: Case[] = [
    ["a file: URL", url("file:///etc/passwd"), [NOT_URL]],
    ["a javascript: URL", url("javascript:alert(1)"), [NOT_URL]],
    ["an ftp: URL", url("ftp://203.0.113.1/"), [NOT_URL]],
    ["a space in the host", url("http://203.0.113.1 :8000"), [UNSEEN]],
    ["a tab in the path", url("http://203.0.113.1:8000/\tv1"), [UNSEEN]],
    ["a YAML document injected after a newline", url("http://203.0.113.1:8000\nmodel_list: []"), [UNSEEN]],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
  it("accepts an https URL with a path", () => {
    expect(parseSite(F, "s", url("https://gw.example/spark1/")).nodes["spark1"]?.gatewayUrl).toBe(
      "https://gw.example/spark1/",
    );
  });
});

describe("gpuProbe is operator shell, on one line", () => {
  const probe = (p: string) => `${ONE_NODE}      gpuProbe: ${yamlStr(p)}\n`;
  it.each(LINE_BREAKERS)("refuses %s", (_title, payload) => {
    expect(bad(probe(`nvidia-smi -L${payload.slice(1)}`))).toEqual([
      `${F}:6:7: sm121:nodes.spark1.gpuProbe: is one command line; remove line breaks, ` +
        `NUL and other control or invisible characters`,
    ]);
  });
  it("keeps pipes and substitutions as written", () => {
    const p = PAYLOADS.filter((x) => !LINE_BREAKERS.includes(x))
      .map(([, t]) => t)
      .join(" ");
    expect(parseSite(F, "s", probe(p)).nodes["spark1"]?.gpuProbe).toBe(p);
  });
});

describe("paths: leading dashes, ~user, .. and absolute paths where relative ones are meant", () => {
  const rec = (k: string, v: string) =>
    `${ONE_NODE}      recipes:\n        q: { dir: /srv/q, container: q, ${k}: ${v} }\n`;
  const dep = (v: string) =>
    `${ONE_NODE}  sm121:deployments:\n    - { recipe: r, profile: p, nodes: [spark1], overlay: ${v} }\n`;
  const at = (col: number, field: string, problem: string) =>
    `${F}:7:${col}: sm121:nodes.spark1.recipes.q.${field}: ${problem}`;
  const cases: Case[] = [
    ["stateDir -rf", `${ONE_NODE}      stateDir: -rf\n`, [`${F}:6:7: sm121:nodes.spark1.stateDir: stateDir ${DASH}`]],
    [
      "stateDir ~root",
      `${ONE_NODE}      stateDir: ~root/.sm121\n`,
      [`${F}:6:7: sm121:nodes.spark1.stateDir: stateDir ${TILDE}`],
    ],
    [
      "stateDir with ..",
      `${ONE_NODE}      stateDir: ~/../../tmp\n`,
      [`${F}:6:7: sm121:nodes.spark1.stateDir: stateDir ${DOTS}`],
    ],
    [
      "a recipe dir of - (cd - goes to $OLDPWD)",
      `${ONE_NODE}      recipes:\n        q: { dir: "-", container: q }\n`,
      [at(14, "dir", `dir ${DASH}`)],
    ],
    [
      "a recipe dir under ~ops",
      `${ONE_NODE}      recipes:\n        q: { dir: ~ops/q, container: q }\n`,
      [at(14, "dir", `dir ${TILDE}`)],
    ],
    [
      "stop -s (bash would read the rest of the script from stdin)",
      rec("stop", "-s"),
      [at(41, "stop", `stop ${DASH}`)],
    ],
    [
      "an absolute start (preflight checks dir/start, bash runs /tmp/evil.sh)",
      rec("start", "/tmp/evil.sh"),
      [at(41, "start", "start is relative to the recipe dir; write e.g. start.sh")],
    ],
    [
      "a start under ~",
      rec("start", "~/start.sh"),
      [at(41, "start", "start is relative to the recipe dir; write e.g. start.sh")],
    ],
    ["a start that climbs out", rec("start", "../../tmp/evil.sh"), [at(41, "start", `start ${DOTS}`)]],
    [
      "a relative owned mount (it would never match a -v target)",
      rec("ownedMounts", "[mtp.py]"),
      [
        at(
          55,
          "ownedMounts[0]",
          "an owned mount is a container path; write an absolute path such as /workspace/mtp.py",
        ),
      ],
    ],
    [
      "an owned mount with ..",
      rec("ownedMounts", "[/workspace/../mtp.py]"),
      [at(55, "ownedMounts[0]", `an owned mount ${DOTS}`)],
    ],
    [
      "a dockerArgs with a command",
      rec("dockerArgs", "'-e A=1; reboot'"),
      [
        at(
          41,
          "dockerArgs",
          "may hold only words of letters, digits and _ . / : = , @ + % - separated by spaces; " +
            "remove quotes and shell characters (docker arguments reach a generated bash script unquoted)",
        ),
      ],
    ],
    [
      "an absolute overlay (silently re-rooted under the project)",
      dep("/srv/overlays/x"),
      [
        `${F}:7:49: sm121:deployments[0].overlay: overlay is relative to the project directory; write e.g. ` +
          `overlays/qwen38/mtp-r3`,
      ],
    ],
    ["an overlay that climbs out", dep("../overlays/x"), [`${F}:7:49: sm121:deployments[0].overlay: overlay ${DOTS}`]],
    ["an overlay that is a flag", dep("-x"), [`${F}:7:49: sm121:deployments[0].overlay: overlay ${DASH}`]],
    [
      "an absolute recipesDir",
      `${ONE_NODE}  sm121:recipesDir: /etc\n`,
      [`${F}:6:3: sm121:recipesDir: recipesDir is relative to the project directory; write e.g. recipes`],
    ],
    [
      "a recipesDir under ~",
      `${ONE_NODE}  sm121:recipesDir: ~/recipes\n`,
      [`${F}:6:3: sm121:recipesDir: recipesDir is relative to the project directory; write e.g. recipes`],
    ],
    [
      "a recipesDir that climbs out",
      `${ONE_NODE}  sm121:recipesDir: ../../etc\n`,
      [`${F}:6:3: sm121:recipesDir: recipesDir ${DOTS}`],
    ],
    [
      "knownHosts that is a flag",
      `${ONE_NODE}  sm121:knownHosts: -oStrict\n`,
      [`${F}:6:3: sm121:knownHosts: knownHosts ${DASH}`],
    ],
    [
      "knownHosts of another user",
      `${ONE_NODE}  sm121:knownHosts: ~root/.ssh/known_hosts\n`,
      [`${F}:6:3: sm121:knownHosts: knownHosts ${TILDE}`],
    ],
    [
      "a gateway path that is a flag",
      `${ONE_NODE}  sm121:gateway: { path: --help }\n`,
      [`${F}:6:20: sm121:gateway.path: path ${DASH}`],
    ],
    [
      "a gateway path with ..",
      `${ONE_NODE}  sm121:gateway: { path: ~/../../etc/cron.d/x }\n`,
      [`${F}:6:20: sm121:gateway.path: path ${DOTS}`],
    ],
    [
      "a gateway path with a space",
      `${ONE_NODE}  sm121:gateway: { path: "~/gw file.json" }\n`,
      [`${F}:6:20: sm121:gateway.path: path ${PATH_RULE}`],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
});

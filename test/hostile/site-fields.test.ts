/**
 * Every site string that can reach a generated script or a file name, against every payload of
 * PAYLOADS: node names, ssh host and user, ip, node env values, vars, node recipes (dir, start,
 * stop, container, dockerArgs, ownedMounts), stateDir, knownHosts, recipesDir, deployments and
 * the gateway. A plain value is accepted first (the control case), then each payload is refused.
 */
import { describe, expect, it } from "vitest";
import { parseSite } from "../../src/recipe/site";
import { PAYLOADS, rejected, yamlStr } from "./helpers";

const F = "Pulumi.s.yaml";
const parse = (text: string) => parseSite(F, "s", text);

/** One ssh node in block style on lines 1-7; a field under test replaces a line or follows on 8. */
const NODE = [
  "config:",
  "  sm121:nodes:",
  "    spark1:",
  "      ssh:",
  "        host: 203.0.113.1",
  "        user: ops",
  "      ip: 203.0.113.1",
];
const site = (replace: Record<number, string>, ...more: string[]) =>
  `${[...NODE.map((l, i) => replace[i + 1] ?? l), ...more].join("\n")}\n`;
const recipeWith = (key: string, v: string) => {
  const lines = ["      recipes:", "        q:", "          dir: /srv/q", "          container: q"];
  if (key === "dir") lines[2] = `          dir: ${v}`;
  else if (key === "container") lines[3] = `          container: ${v}`;
  else if (key === "ownedMounts") lines.push("          ownedMounts:", `            - ${v}`);
  else lines.push(`          ${key}: ${v}`);
  return site({}, ...lines);
};
const deploymentWith = (key: string, v: string) => {
  const lines = ["  sm121:deployments:", "    - recipe: r", "      nodes: [spark1]"];
  if (key === "recipe") lines[1] = `    - recipe: ${v}`;
  else if (key === "nodes") lines[2] = `      nodes: [${v}]`;
  else lines.push(`      ${key}: ${v}`);
  return site({}, ...lines);
};

const PATH_RULE = "may contain only letters, digits and ~ @ : / . _ + -; remove spaces, quotes and shell characters";
const IDENT = "must be lower-case letters, digits and -, at most 48; rename it";

interface Field {
  field: string;
  valid: string;
  text: (value: string) => string;
  at: string;
  problem: string;
  /** The field path shows the payload (a key): how it is written after the prefix. */
  key?: boolean;
  /** Payload titles that this field accepts by design. */
  accepts?: string[];
}

const FIELDS: Field[] = [
  {
    field: "sm121:nodes.",
    valid: "spark1",
    key: true,
    text: (v) => site({ 3: `    ${v}:` }),
    at: "3:5",
    problem: `a node name ${IDENT}`,
  },
  {
    field: "sm121:nodes.spark1.ssh.host",
    valid: "spark1.lan",
    text: (v) => site({ 5: `        host: ${v}` }),
    at: "5:9",
    problem: "is not a host name or address; write e.g. spark2 or 203.0.113.12",
  },
  {
    field: "sm121:nodes.spark1.ssh.user",
    valid: "ops",
    text: (v) => site({ 6: `        user: ${v}` }),
    at: "6:9",
    problem: "is not a user name; write e.g. ops",
  },
  {
    field: "sm121:nodes.spark1.ip",
    valid: "203.0.113.1",
    text: (v) => site({ 7: `      ip: ${v}` }),
    at: "7:7",
    problem: "is not an IPv4 address; write the node's address on the cluster network, e.g. 203.0.113.12",
  },
  {
    field: "sm121:nodes.spark1.env.REQUIRE_IDLE_GPU",
    valid: "1",
    text: (v) => site({}, "      env:", `        REQUIRE_IDLE_GPU: ${v}`),
    at: "9:9",
    problem:
      `a node env value may contain only letters, digits and _ . / : = , @ + % -; remove spaces, ` +
      `quotes and shell characters`,
  },
  {
    field: "sm121:nodes.spark1.vars.",
    valid: "cache",
    key: true,
    text: (v) => site({}, "      vars:", `        ${v}: /srv/x`),
    at: "9:9",
    problem: "a var name is letters, digits and _; rename it",
  },
  {
    field: "sm121:nodes.spark1.vars.cache",
    valid: "/srv/cache",
    text: (v) => site({}, "      vars:", `        cache: ${v}`),
    at: "9:9",
    problem:
      "a var value may contain only letters, digits and _ . / : = , @ + % -; remove spaces, " +
      "quotes and shell characters",
  },
  {
    field: "sm121:nodes.spark1.recipes.",
    valid: "qwen38-flash",
    key: true,
    text: (v) => site({}, "      recipes:", `        ${v}: { dir: /srv/q, container: q }`),
    at: "9:9",
    problem: `a node recipe name ${IDENT}`,
  },
  {
    field: "sm121:nodes.spark1.recipes.q.dir",
    valid: "/srv/q",
    text: (v) => recipeWith("dir", v),
    at: "10:11",
    problem: `dir ${PATH_RULE}`,
  },
  {
    field: "sm121:nodes.spark1.recipes.q.container",
    valid: "qwen38-flash",
    text: (v) => recipeWith("container", v),
    at: "11:11",
    problem: "is not a container name; use letters, digits, _ . -",
  },
  {
    field: "sm121:nodes.spark1.recipes.q.start",
    valid: "start.sh",
    text: (v) => recipeWith("start", v),
    at: "12:11",
    problem: `start ${PATH_RULE}`,
  },
  {
    field: "sm121:nodes.spark1.recipes.q.stop",
    valid: "stop.sh",
    text: (v) => recipeWith("stop", v),
    at: "12:11",
    problem: `stop ${PATH_RULE}`,
  },
  {
    field: "sm121:nodes.spark1.recipes.q.dockerArgs",
    valid: "-e A=1 -v /a:/b",
    text: (v) => recipeWith("dockerArgs", v),
    at: "12:11",
    accepts: ["a space"],
    problem:
      "may hold only words of letters, digits and _ . / : = , @ + % - separated by spaces; " +
      "remove quotes and shell characters (docker arguments reach a generated bash script unquoted)",
  },
  {
    field: "sm121:nodes.spark1.recipes.q.ownedMounts[0]",
    valid: "/workspace/mtp.py",
    text: (v) => recipeWith("ownedMounts", v),
    at: "13:15",
    problem: `an owned mount ${PATH_RULE}`,
  },
  {
    field: "sm121:nodes.spark1.stateDir",
    valid: "~/.sm121",
    text: (v) => site({}, `      stateDir: ${v}`),
    at: "8:7",
    problem: `stateDir ${PATH_RULE}`,
  },
  {
    field: "sm121:knownHosts",
    valid: "~/.ssh/known_hosts",
    text: (v) => site({}, `  sm121:knownHosts: ${v}`),
    at: "8:3",
    problem: `knownHosts ${PATH_RULE}`,
  },
  {
    field: "sm121:recipesDir",
    valid: "recipes",
    text: (v) => site({}, `  sm121:recipesDir: ${v}`),
    at: "8:3",
    problem: `recipesDir ${PATH_RULE}`,
  },
  {
    field: "sm121:deployments[0].name",
    valid: "mine",
    text: (v) => deploymentWith("name", v),
    at: "11:7",
    problem: `name ${IDENT}`,
  },
  {
    field: "sm121:deployments[0].recipe",
    valid: "qwen38-flash",
    text: (v) => deploymentWith("recipe", v),
    at: "9:7",
    problem: `recipe ${IDENT}`,
  },
  {
    field: "sm121:deployments[0].profile",
    valid: "best",
    text: (v) => deploymentWith("profile", v),
    at: "11:7",
    problem: `profile ${IDENT}`,
  },
  {
    field: "sm121:deployments[0].nodes[0]",
    valid: "spark1",
    text: (v) => deploymentWith("nodes", v),
    at: "10:15",
    problem: `a node name ${IDENT}`,
  },
  {
    field: "sm121:deployments[0].overlay",
    valid: "overlays/mtp-r3",
    text: (v) => deploymentWith("overlay", v),
    at: "11:7",
    problem: `overlay ${PATH_RULE}`,
  },
  {
    field: "sm121:gateway.path",
    valid: "~/gateway.json",
    text: (v) => site({}, "  sm121:gateway:", `    path: ${v}`),
    at: "9:5",
    problem: `path ${PATH_RULE}`,
  },
  {
    field: "sm121:gateway.model",
    valid: "qwen38",
    text: (v) => site({}, "  sm121:gateway:", "    path: ~/gw.json", `    model: ${v}`),
    at: "10:5",
    problem: "may contain only letters, digits and . _ / : -; write the served model name, e.g. qwen38",
  },
  {
    field: "sm121:gateway.node",
    valid: "spark1",
    text: (v) => site({}, "  sm121:gateway:", "    path: ~/gw.json", `    node: ${v}`),
    at: "10:5",
    problem: `node ${IDENT}`,
  },
];

describe.each(FIELDS)("$field", (f) => {
  it("accepts the plain value (the control case)", () => {
    expect(() => parse(f.text(yamlStr(f.valid)))).not.toThrow();
  });
  it.each(PAYLOADS.filter(([title]) => !(f.accepts ?? []).includes(title)))("refuses %s", (_title, payload, shown) => {
    const field = f.key === true ? `${f.field}${f.valid}${shown.slice(1)}` : f.field;
    expect(rejected(() => parse(f.text(yamlStr(f.valid + payload.slice(1)))), F)).toEqual([
      `${F}:${f.at}: ${field}: ${f.problem}`,
    ]);
  });
});

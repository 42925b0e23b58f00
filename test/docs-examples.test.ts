/**
 * The docs' examples are true: every whole recipe in a ```toml block of README.md and docs/*.md
 * passes what `sm121 validate` checks, on as many nodes as its tp asks (a recipe the docs show
 * must not be one sm121 refuses), and README's example plan names the nodes of README's own site.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { REPO } from "./helpers/project";

const FILES = [
  "README.md",
  ...readdirSync(join(REPO, "docs")).flatMap((f) => (f.endsWith(".md") ? [`docs/${f}`] : [])),
];

/** The fenced blocks of a language in a Markdown file, with the line each starts on. */
function blocks(file: string, lang: string): Array<{ line: number; text: string }> {
  const out: Array<{ line: number; text: string }> = [];
  let open: { line: number; lines: string[] } | undefined;
  for (const [i, l] of readFileSync(join(REPO, file), "utf8").split("\n").entries()) {
    if (open === undefined && l.trim() === `\`\`\`${lang}`) open = { line: i + 1, lines: [] };
    else if (open !== undefined && l.trim() === "```") {
      out.push({ line: open.line, text: open.lines.join("\n") });
      open = undefined;
    } else open?.lines.push(l);
  }
  return out;
}

describe("the docs' example recipes", () => {
  const recipes = FILES.flatMap((f) => blocks(f, "toml").map((b) => ({ ...b, file: f })));
  const whole = recipes.filter((r) => /^model\s*=/m.test(r.text));

  it("are there to check", () => {
    expect(whole.length).toBeGreaterThan(1);
  });

  it.each(whole.map((r) => [`${r.file}:${r.line}`, r] as const))("%s validates on its nodes", (_, r) => {
    const recipe = parseRecipe("recipes/example.toml", r.text);
    const nodes = Array.from({ length: Math.max(1, recipe.tp ?? 1) }, (_v, i) => `spark${i + 1}`);
    const site = [
      "config:",
      "  sm121:nodes:",
      ...nodes.map((n, i) => `    ${n}: { ssh: { host: 10.0.0.${11 + i}, user: ops }, ip: 10.0.0.${11 + i} }`),
      "  sm121:deployments:",
      `    - { recipe: example, nodes: [${nodes.join(", ")}] }`,
      "",
    ].join("\n");
    expect(() =>
      renderSite(parseSite("Pulumi.s.yaml", "s", site), new Map([["example", recipe]]), { root: REPO }),
    ).not.toThrow();
  });
});

describe("README's example plan", () => {
  it("names the nodes of README's site", () => {
    const site = blocks("README.md", "yaml")[0]?.text ?? "";
    const deployments = (parse(site) as { config: Record<string, unknown> }).config["sm121:deployments"] as Array<{
      name: string;
      nodes: string[];
    }>;
    const plan = blocks("README.md", "text")[0]?.text ?? "";
    const restarts = [...plan.matchAll(/^sm121: (\S+): restarts ([^:]+):/gm)];
    expect(restarts.length).toBeGreaterThan(0);
    for (const [, name, nodes] of restarts) {
      const d = deployments.find((x) => x.name === name);
      expect(d?.nodes, `${name} in README's site`).toEqual(nodes?.split(", "));
    }
  });
});

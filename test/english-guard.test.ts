/**
 * No English line slips past the catalogues: every word sm121 says to the operator is a message
 * (src/text/messages), said in the operator's language. This test reads src/ with the TypeScript
 * compiler's parser and lists, as file:line, each string literal or template with words that is
 * handed straight to something that prints it:
 *
 * - a provider's log: `providerLog(...)(...)`, or a function named `log` (`log(...)`, `o.log(...)`),
 *   the form in which the providers, serve/ and remote/ pass their progress lines around;
 * - the Pulumi SDK's `log.info/warn/error` (the program's diagnostics), and a CLI command's
 *   `ctx.out(...)`/`ctx.err(...)`;
 * - `new XError(...)`/`new XFailure(...)` anywhere in src/: Pulumi shows a provider's or the
 *   program's error under the resource, and the CLI prints its own.
 *
 * A text is said with words when its literal part has a run of two letters or more; a template's
 * values (`${node}: ${said}`) are not words. What stays English on purpose (docs/cli.md,
 * "Languages") is the short list ALLOWED below, each entry with its reason.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO } from "./helpers/project";

interface Allowed {
  file: string;
  /** A part of the literal text that marks the line (a line number would move). */
  text: string;
  reason: string;
}

const ALLOWED: readonly Allowed[] = [
  {
    file: "src/cli/pulumi.ts",
    text: "pulumi config get",
    reason: "a command line as the operator types it; PulumiError says it inside a message (cli pulumi.failed)",
  },
  {
    file: "src/providers/shim.ts",
    text: "is reserved for sm121's own use",
    reason: "sm121's own components passing a reserved property: a bug of sm121, never the operator's input",
  },
  {
    file: "src/providers/stateVersion.ts",
    text: "no upgrade from state version",
    reason: "a release without an upgrade step for a version it wrote: a bug of sm121 (test/state-version)",
  },
  {
    file: "src/serve/sitefile.ts",
    text: "not on a node",
    reason: "an invariant: only a file placed on a node reaches onNode",
  },
  {
    file: "src/render/deployment.ts",
    text: "is not loaded",
    reason: "an invariant: the site's check refuses a deployment whose recipe is not loaded, before render",
  },
  {
    file: "src/dgpp/files.render.ts",
    text: "has no repo/rev to provision",
    reason: "an invariant: the build script is asked for only when the recipe pins repo and rev",
  },
  {
    file: "src/engines/options/table.ts",
    text: "is not an argparse nargs",
    reason: "the engines' option tables are sm121's data: a bad entry is sm121's bug (test/engines-args)",
  },
];

/** An invariant's words (`unreachable: ...`): what sm121's own code never does, not the operator's to read. */
const INVARIANT = /^unreachable\b/;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [p] : [];
  });
}

/** The literal text of an argument when it is a string with words, else undefined. */
function wordsOf(e: ts.Expression): string | undefined {
  const text = literalText(e);
  return text !== undefined && /[A-Za-z]{2,}/.test(text) ? text : undefined;
}

function literalText(e: ts.Expression): string | undefined {
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return e.text;
  if (ts.isParenthesizedExpression(e)) return literalText(e.expression);
  if (ts.isTemplateExpression(e)) {
    const inner = e.templateSpans.map((s) => literalText(s.expression) ?? "").join(" ");
    return [e.head.text, ...e.templateSpans.map((s) => s.literal.text), inner].join(" ");
  }
  if (ts.isBinaryExpression(e) && e.operatorToken.kind === ts.SyntaxKind.PlusToken) {
    const parts = [literalText(e.left), literalText(e.right)].filter((p) => p !== undefined);
    return parts.length > 0 ? parts.join(" ") : undefined;
  }
  if (ts.isConditionalExpression(e)) {
    const parts = [literalText(e.whenTrue), literalText(e.whenFalse)].filter((p) => p !== undefined);
    return parts.length > 0 ? parts.join(" ") : undefined;
  }
  return undefined;
}

/** What prints its argument: the kind of printer, or undefined. */
function printer(call: ts.CallExpression): string | undefined {
  const f = call.expression;
  if (ts.isCallExpression(f) && ts.isIdentifier(f.expression) && f.expression.text === "providerLog")
    return "providerLog(...)";
  if (ts.isIdentifier(f) && f.text === "log") return "log";
  if (ts.isPropertyAccessExpression(f)) {
    const name = f.name.text;
    const on = f.expression;
    const sdkLog =
      (ts.isIdentifier(on) && on.text === "log") || (ts.isPropertyAccessExpression(on) && on.name.text === "log");
    if (sdkLog && ["info", "warn", "error"].includes(name)) return `log.${name}`;
    if (name === "log" && !(ts.isIdentifier(on) && on.text === "console")) return ".log";
    // The CLI's own output (src/cli/context): what a command prints on stdout and stderr.
    if ((name === "out" || name === "err") && ts.isIdentifier(on) && on.text === "ctx") return `ctx.${name}`;
  }
  return undefined;
}

function findings(path: string): string[] {
  const file = relative(REPO, path);
  const src = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
  const out: string[] = [];
  const report = (node: ts.Node, what: string, text: string) => {
    if (INVARIANT.test(text) || ALLOWED.some((a) => a.file === file && text.includes(a.text))) return;
    const line = src.getLineAndCharacterOfPosition(node.getStart(src)).line + 1;
    out.push(`${file}:${line}: ${what}: ${JSON.stringify(text.trim().slice(0, 70))}`);
  };
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const p = printer(node);
      const words = node.arguments[0] === undefined ? undefined : wordsOf(node.arguments[0]);
      if (p !== undefined && words !== undefined) report(node, p, words);
    }
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression)) {
      const name = node.expression.text;
      const first = node.arguments?.[0];
      const words = first === undefined ? undefined : wordsOf(first);
      if (/(Error|Failure)$/.test(name) && words !== undefined) report(node, `new ${name}`, words);
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

describe("the operator reads sm121's words in their language", () => {
  const files = sources(join(REPO, "src"));

  it("reads the sources", () => {
    expect(files.map((p) => relative(REPO, p))).toContain("src/providers/surgeImpl.ts");
  });

  it("hands no English text straight to a log or an error (say it with a message key)", () => {
    const found = files.flatMap(findings);
    expect(found.join("\n"), "English that reaches the operator: make each a message").toBe("");
  });

  it("allows only texts that are still there", () => {
    const unused = ALLOWED.filter((a) => !readFileSync(join(REPO, a.file), "utf8").includes(a.text));
    expect(unused.map((a) => `${a.file}: ${a.text}`)).toEqual([]);
  });
});

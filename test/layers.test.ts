/**
 * The import rules of DESIGN.md and docs/design.md ("Layout"), file by file: the pure core (text <-
 * recipe <- engines <- targets <- render) imports nothing that reaches a node; protocol <- remote
 * <- serve may use the pure core; plan (pure) the core, the project and serve's rules; providers and
 * components use all of those; cli uses everything but
 * providers and components; the program uses all. A file's layer is its folder's, and in a feature's
 * folder (src/fabric/, src/dgpp/: a feature that crosses layers, kept in one place) the layer its
 * name ends in: `env.render.ts` is pure render code, `resolve.serve.ts` dials. One exception is
 * written down: the writers of node records in the pure core (a status script, the link test's
 * probe) import protocol's `printRecord`, which only builds a line and loads no zod.
 *
 * The imports are read with the TypeScript compiler's parser (static, type-only, re-exports,
 * `import()`, `require()`), so a failure names each file, the module it imports and both layers.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, posix, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { REPO } from "./helpers/project";

const SRC = join(REPO, "src");

const PURE = ["text", "recipe", "engines", "targets", "render"] as const;
const LAYERS = [
  ...PURE,
  "protocol",
  "remote",
  "serve",
  "project",
  "plan",
  "providers",
  "components",
  "cli",
  "program",
] as const;
type Layer = (typeof LAYERS)[number];

/** What each layer may import besides itself. */
const MAY_IMPORT: Record<Layer, readonly Layer[]> = {
  text: [],
  recipe: ["text"],
  engines: ["text", "recipe"],
  targets: ["text", "recipe", "engines"],
  render: ["text", "recipe", "engines", "targets"],
  protocol: ["text"],
  remote: [...PURE, "protocol"],
  serve: [...PURE, "protocol", "remote"],
  // The project loader that the program and the CLI share (src/project.ts).
  project: [...PURE, "protocol", "remote", "serve"],
  // planSite is pure: the pure core, the loaded project, serve's pure rules (owners, the fabric's refusals);
  // it dials no node. It fills the providers' settings (SETTINGS below).
  plan: [...PURE, "protocol", "serve", "project"],
  providers: [...PURE, "protocol", "remote", "serve"],
  components: [...PURE, "protocol", "remote", "serve", "plan", "providers"],
  cli: [...PURE, "protocol", "remote", "serve", "project"],
  program: [...PURE, "protocol", "remote", "serve", "project", "plan", "providers", "components"],
};

/** The folders of features that cross layers: each file names its layer (`<noun>.<layer>.ts`). */
const FEATURES = ["fabric", "dgpp", "gateway"];

/** The files at the top of src/. */
const TOP: Record<string, Layer> = {
  "index.ts": "program",
  "program.ts": "program",
  "programLogin.ts": "program",
  "programInputs.ts": "program",
  "programLook.ts": "program",
  "compileCache.ts": "program",
  "project.ts": "project",
};

/** The providers' settings (types and their defaults, no provider code), which the plan fills. */
const SETTINGS = "providers/settings.ts";

/** What the pure core may take from protocol/: the record writer, which loads no zod. */
const WRITER = new Set(["printRecord"]);

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return tsFiles(p);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [p] : [];
  });
}

/** The layer of a file (a path under src/); undefined: it has none (the test names it). */
function layerOf(file: string): Layer | undefined {
  const parts = file.split("/");
  const top = parts[0] ?? "";
  if (parts.length === 1) return TOP[top];
  const named = FEATURES.includes(top) ? /\.([a-z]+)\.ts$/.exec(file)?.[1] : top;
  return LAYERS.find((l) => l === named);
}

interface Import {
  from: string;
  /** The module it names, as a path under src/. */
  to: string;
  /** The names a static import or re-export takes; undefined: the whole module. */
  names?: string[];
}

function importsOf(file: string): Import[] {
  const text = readFileSync(join(SRC, file), "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (spec: string, names?: string[]) => {
    if (!spec.startsWith(".")) return;
    const target = posix.normalize(posix.join(posix.dirname(file), spec));
    const to = [target, `${target}.ts`, `${target}/index.ts`].find((c) => {
      try {
        return statSync(join(SRC, c)).isFile();
      } catch {
        return false;
      }
    });
    found.push({ from: file, to: to ?? `${target} (no such module)`, ...(names !== undefined && { names }) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const c = node.importClause;
      const named = c?.namedBindings !== undefined && ts.isNamedImports(c.namedBindings) ? c.namedBindings : undefined;
      const whole = c === undefined || c.name !== undefined || named === undefined;
      add(node.moduleSpecifier.text, whole ? undefined : named.elements.map((e) => (e.propertyName ?? e.name).text));
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
      if (ts.isStringLiteral(node.moduleSpecifier)) {
        const e = node.exportClause;
        const names =
          e !== undefined && ts.isNamedExports(e) ? e.elements.map((x) => (x.propertyName ?? x.name).text) : undefined;
        add(node.moduleSpecifier.text, names);
      }
    } else if (ts.isCallExpression(node)) {
      const [arg] = node.arguments;
      const callee = node.expression;
      const loads =
        callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === "require");
      if (loads && arg !== undefined && ts.isStringLiteral(arg)) add(arg.text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const lit = node.argument.literal;
      if (ts.isStringLiteral(lit)) add(lit.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Why an import breaks the rules, or undefined. */
function broken(i: Import): string | undefined {
  const from = layerOf(i.from);
  const to = layerOf(i.to);
  if (from === undefined || to === undefined || from === to || MAY_IMPORT[from].includes(to)) return undefined;
  const writer = i.to === "protocol/index.ts" && i.names !== undefined && i.names.every((n) => WRITER.has(n));
  if ((PURE as readonly Layer[]).includes(from) && writer) return undefined;
  if (from === "plan" && i.to === SETTINGS) return undefined;
  return `${i.from} (${from}) imports ${i.to} (${to})`;
}

describe("the import rules, file by file", () => {
  const files = tsFiles(SRC).map((p) => relative(SRC, p).split("\\").join("/"));
  const imports = files.flatMap(importsOf);

  it("reads the imports of every file of src/", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(imports.length).toBeGreaterThan(500);
    // Each kind of import is seen: a dynamic import(), a type-only import, a re-export, a JSON file.
    expect(imports).toContainEqual({ from: "providers/engineImpl.ts", to: "serve/serve.ts" });
    expect(imports).toContainEqual({ from: "remote/index.ts", to: "render/types.ts", names: ["NodeConn"] });
    expect(imports).toContainEqual({ from: "protocol/index.ts", to: "protocol/schemas.ts", names: ["recordKinds"] });
    expect(imports).toContainEqual({ from: "text/messages/catalogues.ts", to: "text/messages/cli/en.json" });
  });

  it("gives every file a layer: its folder's, or in a feature's folder the one its name ends in", () => {
    const none = files.filter((f) => layerOf(f) === undefined);
    const rule =
      `a folder of src/ is a layer (${LAYERS.join(", ")}) or a feature's (${FEATURES.join(", ")}), ` +
      "whose files are named <noun>.<layer>.ts; a file at the top of src/ is listed in TOP";
    expect(none.join("\n"), rule).toBe("");
    expect(files.filter((f) => FEATURES.includes(f.split("/")[0] ?? "")).length).toBeGreaterThan(10);
  });

  it("imports only what each file's layer may import", () => {
    const wrong = imports.flatMap((i) => broken(i) ?? []);
    expect(wrong.join("\n"), "imports against the layers").toBe("");
  });

  it("names only modules that exist", () => {
    const missing = imports.filter((i) => i.to.endsWith("(no such module)"));
    expect(missing.map((i) => `${i.from}: ${i.to}`).join("\n")).toBe("");
  });

  it("holds the pure core to the writer exception: printRecord only", () => {
    const pure = (f: string) => (PURE as readonly (Layer | undefined)[]).includes(layerOf(f));
    const pureToProtocol = imports.filter((i) => pure(i.from) && layerOf(i.to) === "protocol");
    expect(pureToProtocol.length).toBeGreaterThan(0);
    for (const i of pureToProtocol) expect([i.from, i.names]).toEqual([i.from, ["printRecord"]]);
  });
});

/**
 * The cross-checks and the render, on temporary copies of corpus/project: names that are also
 * Object.prototype properties, variables that expand to flags, hostile overlays named by the
 * site, missing or unreadable files, and loadProject reporting the site's and the recipes' errors
 * together. Every one ends in a SpecError before a bundle exists.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadProject } from "../../src/project";
import { loadRecipes } from "../../src/engines/recipes";
import { parseSite } from "../../src/recipe/site";
import { renderSite } from "../../src/render/deployment";
import { cleanTemp, rejected, tempProject } from "./helpers";

afterAll(cleanTemp);

const F = "Pulumi.hostile.yaml";
const P = "recipes/scripted/profiles";
/** spark1 on lines 3-9 serves the script recipe `scripted`; line 11 is the deployment. */
const siteText = (opts: { vars?: string; profile?: string; overlay?: string; nodeExtra?: string } = {}) =>
  [
    "config:",
    "  sm121:nodes:",
    "    spark1:",
    "      host: local",
    "      ip: 127.0.0.1",
    "      env: { BIND: 127.0.0.1, PORT: 8000 }",
    `      vars: { ${opts.vars ?? "cache: /srv/cache"} }`,
    "      recipes:",
    `        scripted: { dir: /srv/scripted, container: scripted, ownedMounts: ` +
      `[/workspace/mtp.py]${opts.nodeExtra ?? ""} }`,
    "  sm121:deployments:",
    `    - { recipe: scripted, profile: ${opts.profile ?? "base"}, nodes: ` +
      `[spark1]${opts.overlay === undefined ? "" : `, overlay: ${opts.overlay}`} }`,
    "",
  ].join("\n");

function render(root: string, text: string): unknown {
  return renderSite(parseSite(F, "hostile", text), loadRecipes(join(root, "recipes"), "recipes"), { root });
}

const KNOWN = "the known variables are {{cache}}, {{recipeDir}}; or define";

describe("names that are Object.prototype properties", () => {
  it("a profile for the node recipe `constructor` (every object has one)", () => {
    const root = tempProject({ [`${P}/ctor.env`]: "# sm121-recipe: constructor\nA=1\n" });
    expect(rejected(() => render(root, siteText({ profile: "ctor" })), F)).toEqual([
      `${F}:8:7: sm121:nodes.spark1.recipes: profile ctor needs the node recipe "constructor" on spark1; ` +
        `add recipes.constructor: {dir, container} to node spark1`,
    ]);
  });

  it.each(["constructor", "__proto__", "toString", "hasOwnProperty"])("a profile variable {{%s}}", (name) => {
    const root = tempProject({ [`${P}/v.env`]: `# sm121-recipe: scripted\nA="{{${name}}}"\n` });
    expect(rejected(() => render(root, siteText({ profile: "v" })), `${P}/v.env`)).toEqual([
      `${P}/v.env:2:4: A: unknown variable {{${name}}}; ${KNOWN} ${name} in the site ` +
        `(nodes.spark1.vars or the recipe's vars)`,
    ]);
  });
});

describe("site variables that expand into something hostile", () => {
  const SCOPE = "the site (nodes.spark1.vars or the recipe's vars)";
  it("a mkdir variable that is a flag", () => {
    const root = tempProject({ [`${P}/m.env`]: "# sm121-recipe: scripted\n# sm121-mkdir: {{cache}}\nA=1\n" });
    expect(rejected(() => render(root, siteText({ profile: "m", vars: "cache: -rf" })), `${P}/m.env`)).toEqual([
      `${P}/m.env:2:16: directive sm121-mkdir: -rf (after substituting {{cache}}) is not an absolute path; ` +
        `give the variable an absolute path in ${SCOPE}`,
    ]);
  });

  it("a -v source variable that is a flag", () => {
    expect(rejected(() => render(tempProject(), siteText({ vars: "cache: --privileged" })), `${P}/base.env`)).toEqual([
      `${P}/base.env:8:6: EXTRA_DOCKER_ARGS: -v --privileged:/cache: ` +
        `source --privileged is not an absolute path (after substituting {{cache}}); ` +
        `write -v /absolute/source:/absolute/target, optionally with :ro or :rw; the source is a path on the node`,
      `${P}/base.env:3:16: directive sm121-mkdir: --privileged (after substituting {{cache}}) is ` +
        `not an absolute path; give the variable an absolute path in ${SCOPE}`,
    ]);
  });
});

describe("overlays named by the site", () => {
  it("refuses the injection overlay before rendering", () => {
    const root = tempProject();
    const f = join(root, "overlays/injection/docker-args.txt");
    expect(rejected(() => render(root, siteText({ overlay: "overlays/injection" })))[0]).toBe(
      `${f}:2:6: -e A=$(id) contains \`$\`; a word here may hold only letters, digits and _ . / : = , @ + % -, ` +
        `because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script`,
    );
  });

  it("names a missing overlay directory", () => {
    const root = tempProject();
    const dir = join(root, "overlays/none");
    const fix =
      `an overlay directory holds docker-args.txt and manifest.json; ` +
      `build it with the overlay builder (--out ${dir}) or give the right directory`;
    expect(rejected(() => render(root, siteText({ overlay: "overlays/none" })))).toEqual([
      `${dir}/docker-args.txt:1:1: overlay: the overlay has no docker-args.txt; ${fix}`,
      `${dir}/manifest.json:1:1: overlay: the overlay has no manifest.json; ${fix}`,
    ]);
  });
});

describe("files that are missing or not files", () => {
  it("a profile that is a directory", () => {
    const root = tempProject();
    mkdirSync(join(root, P, "dir.env"));
    expect(rejected(() => render(root, siteText({ profile: "dir" })), `${P}/dir.env`)).toEqual([
      `${P}/dir.env:1:1: cannot read the profile (EISDIR); check the path`,
    ]);
  });

  it("a recipes directory that does not exist (loadProject)", () => {
    const root = tempProject({ [F]: `${siteText()}  sm121:recipesDir: nowhere\n` });
    expect(rejected(() => loadProject(root, "hostile"), F)).toEqual([
      `${F}:12:3: sm121:recipesDir: nowhere/ is not a directory of ${root}; ` +
        `create nowhere/ with a recipe in it (nowhere/<name>.toml, see docs/recipes.md), ` +
        `or set sm121:recipesDir to the project's directory of *.toml recipes`,
    ]);
  });
});

describe("loadProject reports the site's and the recipes' errors together", () => {
  it("a flag as stateDir, a NUL in a hook and a recipe file that is no recipe name", () => {
    const root = tempProject({
      [F]: siteText({ nodeExtra: "" }).replace("      host: local", "      host: local\n      stateDir: -rf"),
      "recipes/hooked.toml":
        'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n[hooks]\n' +
        'after_stop = ["docker rm -f x\\u0000"]\n',
      "recipes/Qwen 3.toml": 'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n',
    });
    expect(rejected(() => loadProject(root, "hostile"))).toEqual([
      `${F}:5:7: sm121:nodes.spark1.stateDir: stateDir starts with "-"; a leading dash would be read as a flag`,
      'recipes/Qwen 3.toml:1:1: name: the recipe is named after its file, and "Qwen 3" is not a recipe name; ' +
        'rename the file to lower-case letters, digits and - (at most 48), or set name = "<name>"',
      "recipes/hooked.toml:5:15: hooks.after_stop[0]: a hook contains a newline or NUL; write it on one line",
    ]);
  });

  it("renders the corpus project as it is (the control case)", () => {
    const p = loadProject(tempProject(), "hostile");
    expect(p.bundles.map((b) => [b.deployment, b.nodes.map((n) => n.node)])).toEqual([["scripted-base", ["spark1"]]]);
  });
});

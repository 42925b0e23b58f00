/**
 * The project file `sm121 init` writes in a directory that has none: the operator's own sm121
 * project, which runs the installed sm121 program (`main:` the package's directory) and keeps its
 * stacks where ./backend put them (`backend.url`, when sm121 chose the place), so that `sm121 up`
 * and `pulumi up` in that directory find the same program, project and stack.
 */
import { resolve } from "node:path";
import { Document, Pair, Scalar, YAMLMap } from "yaml";
import type { StackSetup } from "./backend";

/** The package this CLI runs from (dist/src/cli/ is three levels down). */
export const PACKAGE_ROOT = resolve(__dirname, "..", "..", "..");

/** Pulumi.yaml of an operator's project, written with the YAML library. */
export function projectYaml(setup: Pick<StackSetup, "from" | "url">, main: string = PACKAGE_ROOT): string {
  const doc = new Document({});
  const top = new YAMLMap();
  const add = (key: string, value: unknown, comment?: string) => {
    const k = new Scalar(key);
    if (comment !== undefined) k.commentBefore = ` ${comment}`;
    top.items.push(new Pair(k, value));
  };
  add("name", "sm121");
  add("description", "Serve LLMs declaratively on clusters of NVIDIA DGX Spark machines");
  // The installed program is compiled JavaScript: no type-check at each run.
  add("runtime", doc.createNode({ name: "nodejs", options: { typescript: false } }));
  add("main", main, "the sm121 program this project runs: the installed package");
  if (setup.from === "sm121")
    add(
      "backend",
      doc.createNode({ url: setup.url }),
      "where Pulumi keeps this project's stacks, for sm121's verbs and pulumi's (docs/team.md moves them)",
    );
  doc.contents = top;
  doc.commentBefore =
    " Written by sm121 init: an sm121 project. Its recipes are in recipes/, each stack's site in\n" +
    " Pulumi.<stack>.yaml; `sm121 up` and `pulumi up` run here.";
  return doc.toString({ lineWidth: 0 });
}

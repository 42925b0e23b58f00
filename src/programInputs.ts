/**
 * What the program reads besides the site, gathered once from Pulumi, the environment and the
 * stack's configuration (src/plan/inputs RunInputs), and the stack's secrets as Pulumi secrets:
 * every one refused here, before any node is reached, when it cannot be right.
 */
import type { Config } from "@pulumi/pulumi/config";
import { getProject } from "@pulumi/pulumi/metadata";
import { all, type Output } from "@pulumi/pulumi/output";
import { isDryRun } from "@pulumi/pulumi/runtime/settings";
import { homedir } from "node:os";
import { known } from "./components/known";
import { refusal } from "./components/refusal";
import { readRunInputs, type RunInputs } from "./plan/inputs";
import { projectBackend, type Project } from "./project";
import { SpecError, SpecErrors } from "./recipe/errors";
import { secretRefusals } from "./render/secrets";
import { currentBackend } from "./serve/owner";

/** A value, or the program's refusal: input errors print as themselves (file:line:col: field: problem; fix). */
export function refusing<T extends object>(read: () => T | { refused: string }): T {
  let r: T | { refused: string };
  try {
    r = read();
  } catch (e) {
    if (e instanceof SpecError || e instanceof SpecErrors) throw refusal(e.message);
    throw e;
  }
  if ("refused" in r) throw refusal(r.refused);
  return r;
}

/** The run's inputs and the stack's secrets (HF_TOKEN: sm121:hfToken, API_KEY: sm121:apiKey). */
export async function runInputs(
  project: Project,
  stack: string,
  config: Config,
): Promise<{ run: RunInputs; secrets: Record<string, Output<string>> }> {
  const secrets: Record<string, Output<string>> = {};
  for (const [key, name] of [
    ["HF_TOKEN", "hfToken"],
    ["API_KEY", "apiKey"],
  ] as const) {
    const value = config.getSecret(name);
    if (value !== undefined) secrets[key] = value;
  }
  const backend = currentBackend(process.env, homedir(), projectBackend(project.root));
  const at = {
    stack,
    dryRun: isDryRun(),
    owner: { project: getProject(), stack, backend },
    secrets: { apiKey: "API_KEY" in secrets, hfToken: "HF_TOKEN" in secrets },
  };
  const declared = project.bundles.map((b) => b.deployment);
  const run = refusing(() => readRunInputs(process.env, at, declared));
  // A secret that a path to the nodes cannot carry is refused before any node is reached.
  const serves = project.bundles.filter((b) => !run.down.includes(b.deployment));
  const refused = secretRefusals(await known(all(secrets)), serves);
  if (refused.length > 0) throw refusal(refused.join("\n"));
  return { run, secrets };
}

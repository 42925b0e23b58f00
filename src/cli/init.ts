/**
 * `sm121 init --nodes host1,host2 [--user U] [--port P] [--yes]`: a stack file that fits the
 * operator's own nodes. It scans each node's host key and shows its fingerprint for confirmation
 * (`--yes` for scripts), records the keys in known_hosts, looks at every node over SSH (see
 * ./initsite), and writes `Pulumi.<stack>.yaml`: the nodes as found, a single-node docker vLLM
 * deployment, the two-node tp 2 one commented out, no gateway unless `--gateway`. It refuses to
 * overwrite the stack file, copies the two recipes into recipes/ where they are missing, makes the
 * `file://` state directory, and creates the stack when the Pulumi CLI and a passphrase are there.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseRecipe } from "../engines/recipes";
import { connect } from "../remote";
import { fingerprint, hostKeyStatus, hostPattern, keyTypeOf, verifyHostKey } from "../remote/knownhosts";
import { scanHostKey } from "../remote/keyscan";
import { expandHome } from "../text/home";
import { withoutCredentials } from "../text/secrets";
import { UsageError, bool, str, type Parsed } from "./args";
import { cliAuth } from "./connect";
import type { CliContext } from "./context";
import { say, t } from "../text/messages";
import { nodeFacts, PAIR_RECIPE, SOLO_RECIPE, stackYaml, type NodeFacts } from "./initsite";

const IDENT = /^[a-z][a-z0-9-]{0,47}$/;

interface Target {
  name: string;
  host: string;
  port: number;
  user: string;
}

function targetsOf(p: Parsed): Target[] {
  const hosts = (str(p, "nodes") ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  if (hosts.length === 0) throw new UsageError(t("init.needsNodes"));
  const port = Number(str(p, "port") ?? "22");
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new UsageError(t("init.badPort", { port: str(p, "port") ?? "" }));
  }
  const user = str(p, "user") ?? userInfo().username;
  const named = hosts.every((h) => IDENT.test(h)) && new Set(hosts).size === hosts.length;
  return hosts.map((host, i) => ({ name: named ? host : `spark${i + 1}`, host, port, user }));
}

/** The recipes shipped beside this CLI (the checkout's recipes/). */
const shippedRecipes = (): string => resolve(__dirname, "..", "..", "..", "recipes");

/** Asks on the terminal; without one, only --yes answers. */
async function confirm(ctx: CliContext, question: string): Promise<boolean> {
  if (process.stdin.isTTY !== true) return false;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
  } finally {
    rl.close();
    ctx.err("");
  }
}

/** Scans every node's host key, shows it, and records the new ones once confirmed. False: refused. */
async function hostKeys(
  ctx: CliContext,
  targets: readonly Target[],
  knownHosts: string,
  yes: boolean,
): Promise<boolean> {
  const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));
  const scan = async (x: Target) => ({ x, key: await scanHostKey(x.host, x.port).catch(asError) });
  const scanned = await Promise.all(targets.map(scan));
  const text = existsSync(knownHosts) ? readFileSync(knownHosts, "utf8") : "";
  const fresh: Array<{ x: Target; blob: Buffer }> = [];
  let bad = false;
  for (const { x, key } of scanned) {
    if (key instanceof Error) {
      ctx.err(t("init.scanFailed", { node: x.name, host: x.host, port: x.port, error: key.message }));
      bad = true;
      continue;
    }
    const s = hostKeyStatus(text, hostPattern(x.host, x.port), key.blob);
    const said = {
      node: x.name,
      host: hostPattern(x.host, x.port),
      type: keyTypeOf(key.blob),
      fingerprint: fingerprint(key.blob),
    };
    if (s.status === "ok") ctx.out(t("init.keyKnown", { ...said, file: knownHosts, line: s.line }));
    else if (s.status === "new") {
      ctx.out(t("init.keyNew", said));
      fresh.push({ x, blob: key.blob });
    } else {
      const v = verifyHostKey(knownHosts, x.host, x.port, key.blob, "strict");
      ctx.err(`${t("common.error")}: ${v.ok ? said.fingerprint : say(v.reason)}`);
      bad = true;
    }
  }
  if (bad) return false;
  if (fresh.length === 0) return true;
  if (!yes && !(await confirm(ctx, t("init.confirmKeys", { count: fresh.length })))) {
    ctx.err(t("init.keysNotConfirmed"));
    return false;
  }
  for (const { x, blob } of fresh) verifyHostKey(knownHosts, x.host, x.port, blob, "accept-new");
  ctx.out(t("init.keysRecorded", { count: fresh.length, file: knownHosts }));
  return true;
}

/** The file:// directory of $PULUMI_BACKEND_URL, else ~/.sm121-state, made if missing. */
function stateDir(ctx: CliContext): { url: string; made: boolean } {
  const set = process.env["PULUMI_BACKEND_URL"];
  if (set !== undefined && set !== "" && !set.startsWith("file://")) return { url: set, made: false };
  const url = set !== undefined && set !== "" ? set : "file://~/.sm121-state";
  const dir = expandHome(url.slice("file://".length));
  const made = !existsSync(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  ctx.out(t(made ? "init.stateMade" : "init.stateThere", { dir }));
  return { url, made };
}

/** `pulumi stack init` when the CLI, the backend and a passphrase are there; its stack file line (the salt) kept. */
function pulumiStack(ctx: CliContext, stack: string, url: string): string {
  const backend = url.startsWith("file://~/") ? `file://${expandHome(url.slice(7))}` : url;
  const env: NodeJS.ProcessEnv = { ...process.env, PULUMI_BACKEND_URL: backend, PULUMI_SKIP_UPDATE_CHECK: "true" };
  if (env["PULUMI_CONFIG_PASSPHRASE"] === undefined && env["PULUMI_CONFIG_PASSPHRASE_FILE"] === undefined) {
    ctx.out(t("init.stackLater", { stack }));
    return "";
  }
  const r = spawnSync("pulumi", ["stack", "init", stack, "--non-interactive"], {
    cwd: ctx.root,
    env,
    encoding: "utf8",
  });
  if (r.error !== undefined || r.status !== 0) {
    ctx.out(t("init.stackLater", { stack }));
    if (r.error === undefined) ctx.err(r.stderr.trim().split("\n").slice(-2).join("\n"));
    return "";
  }
  ctx.out(t("init.stackMade", { stack }));
  const file = join(ctx.root, `Pulumi.${stack}.yaml`);
  return existsSync(file) ? (/^encryptionsalt: .*\n/m.exec(readFileSync(file, "utf8"))?.[0] ?? "") : "";
}

/** recipes/<name>.toml from the shipped recipes where the project has none; an existing one is kept as it is. */
function recipesIn(ctx: CliContext): Record<string, string> {
  const dir = join(ctx.root, "recipes");
  mkdirSync(dir, { recursive: true });
  const images: Record<string, string> = {};
  for (const name of [SOLO_RECIPE, PAIR_RECIPE]) {
    const file = join(dir, `${name}.toml`);
    if (!existsSync(file)) {
      copyFileSync(join(shippedRecipes(), `${name}.toml`), file);
      ctx.out(t("init.recipeWritten", { file: `recipes/${name}.toml` }));
    }
    const image = parseRecipe(`recipes/${name}.toml`, readFileSync(file, "utf8")).image;
    if (image !== undefined) images[name] = image;
  }
  return images;
}

export async function initCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const stack = str(p, "stack") ?? "sparks";
  const file = join(ctx.root, `Pulumi.${stack}.yaml`);
  const targets = targetsOf(p);
  if (existsSync(file)) {
    ctx.err(t("init.exists", { file: `Pulumi.${stack}.yaml`, stack }));
    return 1;
  }
  const knownHosts = expandHome(str(p, "known-hosts") ?? "~/.ssh/known_hosts");
  if (!(await hostKeys(ctx, targets, knownHosts, bool(p, "yes")))) return 1;
  const { auth } = cliAuth({ knownHosts, hostKeys: "strict" }, p);
  const facts: NodeFacts[] = [];
  for (const x of targets) {
    const host = await connect(x.name, { kind: "ssh", host: x.host, port: x.port, user: x.user }, auth);
    try {
      const f = await nodeFacts(host, x);
      facts.push(f);
      const nic = f.nic === undefined ? "-" : `${f.nic.dev} ${f.nic.addr}`;
      const mem = f.memTotalGiB ?? "?";
      ctx.out(t("init.found", { node: x.name, home: f.home, gpus: f.gpus.length, mem, nic, images: f.images.length }));
    } finally {
      host.close();
    }
  }
  const images = recipesIn(ctx);
  const state = stateDir(ctx);
  const salt = pulumiStack(ctx, stack, state.url);
  const knownHostsSaid = str(p, "known-hosts") ?? "~/.ssh/known_hosts";
  const text = stackYaml({ facts, knownHosts: knownHostsSaid, images, gateway: bool(p, "gateway") });
  writeFileSync(file, salt + text, { flag: salt === "" ? "wx" : "w" });
  ctx.out(t("init.wrote", { file: `Pulumi.${stack}.yaml`, deployment: SOLO_RECIPE, node: facts[0]?.name ?? "" }));
  if (!state.url.startsWith("file://")) ctx.out(t("init.backendSet", { url: withoutCredentials(state.url) }));
  else ctx.out(t("init.backendShared", { url: state.url }));
  ctx.out(t("init.next", { stack }));
  return 0;
}

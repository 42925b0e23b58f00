/**
 * `sm121 init --nodes host1,host2 [--user U] [--port P] [--yes]`: a project directory and a stack
 * file that fit the operator's own nodes. Each host is resolved as ssh(1) resolves it
 * (remote/login: `~/.ssh/config`'s HostName, User, Port and IdentityFile; --user and --port win, as
 * on ssh's command line). It scans each node's host key and shows its fingerprint for confirmation
 * (`--yes` for scripts), records the keys in known_hosts, looks at every node over SSH (see
 * ./initsite: each value a node prints is checked before it is written), and writes
 * `Pulumi.<stack>.yaml` with the YAML library: the nodes as found, a single-node docker vLLM
 * deployment, the two-node tp 2 one commented out, no gateway unless `--gateway`. It refuses to
 * overwrite the stack file, copies the two recipes into recipes/ where they are missing, writes a
 * Pulumi.yaml that runs the installed sm121 where the directory has none, and makes the stack
 * (./backend: its state and its secrets' passphrase, made where the operator names none).
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { parse } from "yaml";
import { parseRecipe } from "../engines/recipes";
import { connect, TransportError, type Host } from "../remote";
import { fingerprint, hostKeyStatus, hostPattern, keyTypeOf, verifyHostKey } from "../remote/knownhosts";
import { scanHostKey } from "../remote/keyscan";
import { loginHome, sshTarget } from "../remote/login";
import { parseSite } from "../recipe/site";
import { expandHome } from "../text/home";
import { UsageError, bool, str, type Parsed } from "./args";
import { exportsFor, madeLines, stackSetup, type StackSetup } from "./backend";
import { cliAuth } from "./connect";
import type { CliContext } from "./context";
import { msg, say, t, type MessageKey } from "../text/messages";
import { factProblems, nodeFacts, PAIR_RECIPE, SOLO_RECIPE, stackYaml, type NodeFacts } from "./initsite";
import { projectYaml } from "./initproject";

const IDENT = /^[a-z][a-z0-9-]{0,47}$/;

/** A node to look at: its name in the site, the host as --nodes names it, and where ssh reaches it. */
interface Target {
  name: string;
  host: string;
  address: string;
  port: number;
  user: string;
}

function targetsOf(p: Parsed, env: NodeJS.ProcessEnv): Target[] {
  const hosts = (str(p, "nodes") ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  if (hosts.length === 0) throw new UsageError(t("init.needsNodes"));
  const given = str(p, "port");
  const port = given === undefined ? undefined : Number(given);
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535)) {
    throw new UsageError(t("init.badPort", { port: given ?? "" }));
  }
  const user = str(p, "user");
  const home = loginHome(env["HOME"]);
  const named = hosts.every((h) => IDENT.test(h)) && new Set(hosts).size === hosts.length;
  return hosts.map((host, i) => {
    const to = sshTarget({ host, ...(port !== undefined && { port }), ...(user !== undefined && { user }) }, home);
    return { name: named ? host : `spark${i + 1}`, host, address: to.host, port: to.port, user: to.user };
  });
}

/** The recipes shipped beside this CLI (the package's or the checkout's recipes/). */
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

/** Why a node's host key could not be read, with init's own options in the fix. */
function scanFix(e: Error): string {
  const code = (e as { code?: unknown }).code;
  const notFound = typeof code === "string" && /^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_NODATA)$/.test(code);
  return t(notFound ? "init.fixNotFound" : "init.fixPort");
}

/** Scans every node's host key, shows it, and records the new ones once confirmed. False: refused. */
async function hostKeys(
  ctx: CliContext,
  targets: readonly Target[],
  knownHosts: string,
  yes: boolean,
): Promise<boolean> {
  const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));
  const scan = async (x: Target) => ({ x, key: await scanHostKey(x.address, x.port).catch(asError) });
  const scanned = await Promise.all(targets.map(scan));
  const text = existsSync(knownHosts) ? readFileSync(knownHosts, "utf8") : "";
  const fresh: Array<{ x: Target; blob: Buffer }> = [];
  let bad = false;
  for (const { x, key } of scanned) {
    if (key instanceof Error) {
      const said = { node: x.name, host: x.address, port: x.port, error: key.message, fix: scanFix(key) };
      ctx.err(t("init.scanFailed", said));
      bad = true;
      continue;
    }
    const s = hostKeyStatus(text, hostPattern(x.address, x.port), key.blob);
    const said = {
      node: x.name,
      host: hostPattern(x.address, x.port),
      type: keyTypeOf(key.blob),
      fingerprint: fingerprint(key.blob),
    };
    if (s.status === "ok") ctx.out(t("init.keyKnown", { ...said, file: knownHosts, line: s.line }));
    else if (s.status === "new") {
      ctx.out(t("init.keyNew", said));
      fresh.push({ x, blob: key.blob });
    } else {
      const v = verifyHostKey(knownHosts, x.address, x.port, key.blob, "strict");
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
  for (const { x, blob } of fresh) verifyHostKey(knownHosts, x.address, x.port, blob, "accept-new");
  ctx.out(t("init.keysRecorded", { count: fresh.length, file: knownHosts }));
  return true;
}

/** A login init could not make, with the fix in init's own options (--user, --port, --nodes). */
const INIT_FIXES: Partial<Record<TransportError["kind"], MessageKey>> = {
  auth: "init.fixAuth",
  "not-found": "init.fixNotFound",
  refused: "init.fixPort",
};

async function lookAt(ctx: CliContext, x: Target, auth: ReturnType<typeof cliAuth>["auth"]): Promise<NodeFacts> {
  let host: Host;
  try {
    host = await connect(x.name, { kind: "ssh", host: x.address, port: x.port, user: x.user }, auth);
  } catch (e) {
    const fix = e instanceof TransportError ? INIT_FIXES[e.kind] : undefined;
    if (!(e instanceof TransportError) || fix === undefined) throw e;
    const words = msg(fix, { node: x.name, user: x.user });
    throw new UsageError(say(msg("remote.transport", { node: x.name, step: e.step, detail: e.detail, fix: words })));
  }
  try {
    const f = await nodeFacts(host, x);
    const nic = f.nic === undefined ? "-" : `${f.nic.dev} ${f.nic.addr}`;
    const mem = f.memTotalGiB ?? "?";
    const found = { node: x.name, home: f.home, gpus: f.gpus.length, mem, nic, images: f.images.length };
    if (factProblems(f).length === 0) ctx.out(t("init.found", found));
    return f;
  } finally {
    host.close();
  }
}

/** `pulumi stack init` with the backend and passphrase of ./backend; the salt it wrote, if any. */
function pulumiStack(ctx: CliContext, stack: string, setup: StackSetup): string | undefined {
  const r = spawnSync("pulumi", ["stack", "init", stack, "--non-interactive"], {
    cwd: ctx.root,
    env: setup.env,
    encoding: "utf8",
  });
  if (r.error !== undefined || r.status !== 0) {
    ctx.out(t("init.stackLater", { stack }));
    if (r.error === undefined) ctx.err(r.stderr.trim().split("\n").slice(-2).join("\n"));
    return undefined;
  }
  ctx.out(t("init.stackMade", { stack, url: setup.shown }));
  const file = join(ctx.root, `Pulumi.${stack}.yaml`);
  if (!existsSync(file)) return undefined;
  const salt: unknown = (parse(readFileSync(file, "utf8")) as { encryptionsalt?: unknown } | null)?.encryptionsalt;
  return typeof salt === "string" ? salt : undefined;
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
  const targets = targetsOf(p, process.env);
  if (existsSync(file)) {
    ctx.err(t("init.exists", { file: `Pulumi.${stack}.yaml`, stack }));
    return 1;
  }
  const knownHosts = expandHome(str(p, "known-hosts") ?? "~/.ssh/known_hosts");
  if (!(await hostKeys(ctx, targets, knownHosts, bool(p, "yes")))) return 1;
  const { auth } = cliAuth({ knownHosts, hostKeys: "strict" }, p, process.env, undefined, targets);
  const facts: NodeFacts[] = [];
  for (const x of targets) facts.push(await lookAt(ctx, x, auth));
  // What a node printed is written into the stack file only when it is what it must be.
  const problems = facts.flatMap(factProblems);
  if (problems.length > 0) {
    for (const m of problems) ctx.err(say(m));
    ctx.err(t("init.nothingWritten"));
    return 1;
  }
  const knownHostsSaid = str(p, "known-hosts") ?? "~/.ssh/known_hosts";
  const site = { facts, knownHosts: knownHostsSaid, gateway: bool(p, "gateway") };
  if (!existsSync(join(ctx.root, "Pulumi.yaml"))) {
    const setup = stackSetup(ctx.root, process.env);
    writeFileSync(join(ctx.root, "Pulumi.yaml"), projectYaml(setup));
    ctx.out(t("init.projectWritten", { dir: ctx.root }));
  }
  const images = recipesIn(ctx);
  const setup = stackSetup(ctx.root, process.env, true);
  for (const l of madeLines(setup, false)) ctx.out(l);
  const salt = pulumiStack(ctx, stack, setup);
  const text = stackYaml({ ...site, images, ...(salt !== undefined && { salt }) });
  // The file as the program will read it: the site's own rules hold for every value written.
  parseSite(`Pulumi.${stack}.yaml`, stack, text, (w) => sshTarget(w, loginHome(process.env["HOME"])));
  writeFileSync(file, text, { flag: salt === undefined ? "wx" : "w" });
  ctx.out(t("init.wrote", { file: `Pulumi.${stack}.yaml`, deployment: SOLO_RECIPE, node: facts[0]?.name ?? "" }));
  const exports = exportsFor(setup);
  if (exports.length > 0) ctx.out(t("init.pulumiVerbs", { exports: exports.join("; ") }));
  ctx.out(t("init.next", { stack }));
  return 0;
}

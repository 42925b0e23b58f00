/**
 * The sm121 Pulumi program, loaded by ./index once the dynamic provider host is on its way: read
 * the site from this stack's configuration, load the recipes, render every deployment at plan
 * time, look at every node once (read-only: what runs there, what drifted), and create one
 * Deployment component per deployment.
 */
// The SDK's modules, not its index: the index loads the Automation API (half a second before the
// first resource registers, for nothing this program uses).
import { Config } from "@pulumi/pulumi/config";
import * as log from "@pulumi/pulumi/log";
import { getProject, getStack } from "@pulumi/pulumi/metadata";
import { homedir } from "node:os";
import { all, type Output } from "@pulumi/pulumi/output";
import { allConfig } from "@pulumi/pulumi/runtime/config";
import { isDryRun } from "@pulumi/pulumi/runtime/settings";
import { dynamicHost as provider } from "./providers/host";
import type { Deployment } from "./components/recipe";
import { known } from "./components/known";
import { Site } from "./components/site";
import { refusal } from "./components/refusal";
import { lookScrapeTargets } from "./components/scrapeTargets";
import { loadProject, projectBackend } from "./project";
import { SpecError, SpecErrors } from "./recipe/errors";
import { deploymentFits, fitWarnings, type FitRefusal } from "./render/memfit";
import { deploymentRefusals } from "./render/fitrefusal";
import { nodeBudgets, nodeRefusals, planFitLines } from "./render/nodefit";
import { nodeConn } from "./render/node";
import { Dialer } from "./remote";
import { programLogin } from "./programLogin";
import type { ConnectionSettings } from "./providers/settings";
import { observeSite, type SiteObservation } from "./serve/observe";
import { fabricDeploymentsOf, fabricStep } from "./fabric/step.serve";
import { imageQuestions, imageRefusals, resolvesAuto } from "./fabric/resolve.serve";
import { lookPlaced, type FileLook } from "./serve/sitefile";
import { currentBackend, foreignHolders, ownerDrift, takeoverRefusal, type Owner } from "./serve/owner";
import { secretRefusals } from "./render/secrets";
import { listMsg, msg, say, t } from "./text/messages";
import { allowedProtected, leavingRefusal } from "./text/protected";
import { replicaPlaces, replicaSets } from "./render/replicas";
import { readOverrides, type RunOverrides } from "./render/overrides";
import { renderSite } from "./render/deployment";
import { rollLines, surgePlans } from "./components/surge";

const stack = getStack();
// The project directory (where Pulumi.yaml is), as the language host passes it; the working
// directory is the program's, which may be a compiled output directory.
const root = process.env["PULUMI_NODEJS_ROOT_DIRECTORY"] ?? process.cwd();
/**
 * The site comes from the configuration Pulumi resolved for this run (what Config reads:
 * the stack file, Pulumi.yaml's project config, ESC environments, --config-file).
 */
function load() {
  try {
    return loadProject(root, stack, allConfig());
  } catch (e) {
    // Input errors print as themselves (file:line:col: field: problem; fix), without a stack trace.
    if (e instanceof SpecError || e instanceof SpecErrors) throw refusal(e.message);
    throw e;
  }
}
const { site, bundles: declared, recipes: recipeDefs } = load();
const list = (v: string | undefined) =>
  (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
// `sm121 down <deployment>`: this run leaves the deployment out, as if the site did not list it.
const down = list(process.env["SM121_DOWN"]);
for (const d of down) {
  if (!declared.some((b) => b.deployment === d))
    throw refusal(t("serve.downUnknown", { deployment: d, deployments: declared.map((b) => b.deployment).join(", ") }));
}
let bundles = declared.filter((b) => !down.includes(b.deployment));
/** What a surge serves on each spare group (recipe/spare): looked at with the deployments, never registered as one. */
let surgeBundles = renderSite({ ...site, deployments: site.spares.map((s) => s.deployment) }, recipeDefs, { root });
const surgeNames = new Set(surgeBundles.map((b) => b.deployment));
const config = new Config("sm121");

/** SM121_TIMEOUT_S and SM121_MIN_MEM_GIB (seed 001's --timeout-s, --min-mem-gib), refused before any node is seen. */
function overrides(): RunOverrides {
  try {
    return readOverrides(process.env);
  } catch (e) {
    throw refusal(e instanceof Error ? e.message : String(e));
  }
}
const runOverrides = overrides();
const allow = {
  protected: allowedProtected(process.env),
  experimental: process.env["SM121_EXPERIMENTAL"] === "1",
  restart: process.env["SM121_RESTART"] === "1",
  takeover: list(process.env["SM121_ALLOW_TAKEOVER"]),
  ...(Object.keys(runOverrides).length > 0 && { overrides: runOverrides }),
};
/** The stack this run serves for: recorded on every node it serves (serve/owner). */
const me: Owner = {
  project: getProject(),
  stack,
  backend: currentBackend(process.env, homedir(), projectBackend(root)),
};
const login = programLogin(site, stack, config);
/** How the providers reach the nodes (./programLogin): set once the look has logged in. */
let connection: Output<ConnectionSettings>;
const secrets: Record<string, Output<string>> = {};
const hf = config.getSecret("hfToken");
const apiKey = config.getSecret("apiKey");
if (hf !== undefined) secrets["HF_TOKEN"] = hf;
if (apiKey !== undefined) secrets["API_KEY"] = apiKey;

/** `sm121:preflight: true`: a preview also runs the read-only node checks (seed 001's --dry-run --preflight). */
const preflight = site.preflight && isDryRun();

/** Where the gateway file goes: on a node of the site, or on the machine that runs Pulumi. */
const gwNodeName = site.gateway?.node;
const gwNodeSite = gwNodeName === undefined ? undefined : site.nodes[gwNodeName];
const gwConn =
  gwNodeName === undefined || gwNodeSite === undefined ? undefined : { name: gwNodeName, conn: nodeConn(gwNodeSite) };
const gatewaySettings =
  site.gateway === undefined
    ? undefined
    : { path: site.gateway.path, format: site.gateway.format, ...(gwConn !== undefined && { node: gwConn }) };

/**
 * Every look of the run, over one connection per node: the fabric (`auto` resolved, the
 * deployments it touches rendered again, and its refusals), first where a node's fabric has an
 * `auto` part, else beside the rest; the deployments on each node and the files sm121 keeps there.
 */
async function lookAll(dial: Dialer): Promise<[SiteObservation, FileLook | undefined, FileLook | undefined]> {
  // The spares' nodes too: a surge on several nodes needs their fabric as much as a replica does.
  const withSpares = { ...site, deployments: [...site.deployments, ...site.spares.map((s) => s.deployment)] };
  const every = [...bundles, ...surgeBundles];
  const step = { site: withSpares, recipes: recipeDefs, root, bundles: every, dial, refuse: refusal, images: false };
  const fabric = fabricStep(step);
  // Only an `auto` fabric renders deployments again; any other fabric look runs beside the rest.
  const looked = resolvesAuto(withSpares) ? await fabric : every;
  bundles = looked.filter((b) => !surgeNames.has(b.deployment));
  surgeBundles = looked.filter((b) => surgeNames.has(b.deployment));
  // The image IDs the fabric compares between nodes come with each node's look (its one docker call).
  const ds = fabricDeploymentsOf(looked);
  const [seen, scrape, gateway] = await Promise.all([
    observeSite(site.nodes, [...bundles, ...surgeBundles], dial, {
      checks: preflight,
      livenessS: site.liveness.timeoutS,
      placeOf: (node) => {
        const at = site.locate(["nodes", node, "ssh"]);
        return `${at.line > 0 ? `${at.file}:${at.line}:${at.col}` : at.file}: sm121:nodes.${node}.ssh`;
      },
      me,
      images: imageQuestions(withSpares, ds),
    }),
    lookScrapeTargets(site, dial),
    gatewaySettings === undefined ? undefined : lookPlaced(gatewaySettings, dial),
    fabric,
  ]);
  const differ = imageRefusals(withSpares, ds, seen.images);
  if (differ.length > 0) throw refusal([t("fabric.refuses"), ...differ.map((r) => `  ${r}`)].join("\n"));
  return [seen, scrape, gateway];
}

export async function main(): Promise<Record<string, unknown>> {
  // A secret that a path to the nodes cannot carry is refused before any node is reached.
  const refused = secretRefusals(await known(all(secrets)), bundles);
  if (refused.length > 0) throw refusal(refused.join("\n"));
  // What runs on the nodes now: the plan's drift and node moves, and the refusals that must come
  // before anything is stopped. A preview records no host key; each key a run meets is shown.
  const shown = (m: string) => void log.info(m);
  const auth = { ...(await login.lookAuth()), recordHostKeys: !isDryRun(), onHostKey: shown };
  // One connection per node for every look of this run (the fabric's, the deployments', the
  // files sm121 keeps on a node), closed once they have all answered.
  const dial = new Dialer(auth);
  const looked = lookAll(dial);
  void looked.then(
    () => dial.close(),
    () => dial.close(),
  );
  const [seen, scrapeFound, gatewayFound] = await looked;
  connection = login.connection(dial.usedKeyFiles());
  for (const u of seen.unreachable) void log.warn(t("serve.unreachableUnused", { what: say(u) }));
  const r = register(seen, scrapeFound, gatewayFound);
  const unknown = unknownWords(seen);
  if (unknown.length === 0) return r;
  // A preview says what it leaves as it is and passes, so that `pulumi up` goes on to serve the
  // rest; the up fails for them once every other deployment has gone on.
  if (isDryRun()) {
    for (const u of unknown) void log.warn(u);
    return r;
  }
  await registered;
  throw refusal(unknown.join("\n"));
}

/**
 * The deployments the look could not see (a node down, a login refused), each with why and what
 * to run: nothing of theirs changes in this run, and their state keeps its last outputs (their
 * resources keep their stored inputs: components/recipe `ignoreChanges`). A spare the look could
 * not reach is the plan's reason not to surge, no failure of the run.
 */
function unknownWords(seen: SiteObservation): string[] {
  const what = msg(isDryRun() ? "serve.unknownPlan" : "serve.unknownUp");
  return Object.entries(seen.unknown)
    .filter(([d]) => !surgeNames.has(d))
    .map(([deployment, lines]) => {
      // A node the look reached has its holders listed, even when it holds nothing.
      const nodes = (bundles.find((b) => b.deployment === deployment)?.nodes ?? [])
        .map((n) => n.node)
        .filter((n) => seen.holders[n] === undefined)
        .join(", ");
      const file = `Pulumi.${stack}.yaml`;
      const fails = msg("serve.unknownFails", { deployment, what, lines: listMsg(lines, "lines") });
      return `${say(fails)}\n  ${t("serve.unknownNext", { nodes, deployment, file })}`;
    });
}

/** Resolves once the engine has answered every registration of this run (every step is done). */
let registered: Promise<unknown> = Promise.resolve();

/** The memory fit of every deployment and node: tables, warnings, and the refusals not allowed. */
function memoryFit(seen: SiteObservation, steady: ReadonlySet<string>): void {
  // A deployment the look could not see starts nothing in this run: it has no fit to say.
  const seenOnes = bundles.filter((b) => seen.unknown[b.deployment] === undefined);
  const fits = deploymentFits(seenOnes, recipeDefs, seen.models);
  const budgets = nodeBudgets(fits);
  const lines = planFitLines(fits, budgets, steady);
  // One message for the whole site: each log call is a round trip to the engine.
  if (lines.length > 0) void log.info(lines.join("\n"));
  const allowed = list(process.env["SM121_ALLOW_UNFIT"]);
  const refusals = [...deploymentRefusals(fits), ...nodeRefusals(budgets)];
  const ok = (r: FitRefusal) => allowed.includes("1") || r.nodes.every((n) => allowed.includes(n));
  const refused = refusals.filter((r) => !ok(r));
  if (refused.length > 0) throw refusal(refused.map((r) => r.text).join("\n"));
  for (const r of refusals) void log.warn(t("serve.unfitAllowed", { allowed: allowed.join(","), why: r.text }));
  for (const w of fitWarnings(fits.filter(({ b }) => !steady.has(b.deployment)))) void log.warn(w);
}

/** Deployments of other stacks that this run would stop, where SM121_ALLOW_TAKEOVER does not allow it. */
function takeovers(seen: SiteObservation): string[] {
  return bundles.flatMap((b) =>
    b.nodes.flatMap((nb) => {
      if (allow.takeover.includes(nb.node)) return [];
      const holders = seen.holders[nb.node] ?? [];
      const drift = ownerDrift(nb.node, b.deployment, holders, me);
      return foreignHolders(holders, me).map((h) =>
        [...drift.map((m) => say(m)), takeoverRefusal(nb.node, h, me)].join(": "),
      );
    }),
  );
}

/** The refusals, the memory fit and the resources, from what the look saw. */
function register(
  seen: SiteObservation,
  scrapeFound: FileLook | undefined,
  gatewayFound: FileLook | undefined,
): Record<string, unknown> {
  const taken = takeovers(seen);
  if (taken.length > 0) throw refusal(taken.join("\n"));
  const leaving = seen.leaving.filter((l) => l.protected && !allow.protected.includes(l.node));
  if (leaving.length > 0) {
    throw refusal(leaving.map((l) => leavingRefusal(l.node, l.deployment, down.includes(l.deployment))).join("\n"));
  }
  for (const l of seen.leaving) void log.info(t("serve.leaving", { node: l.node, deployment: l.deployment }));
  // A node moving to a new deployment has no restart line to say it in: the plan says it here.
  for (const m of seen.moving) void log.info(say(m));
  // What an engine would refuse at start (a file it opens at parse time, an HF cache nothing fills),
  // found by the look: refused here, before anything stops. With sm121:preflight, check reports them.
  // A spare's are the plan's reason not to surge there (components/surge), no refusal of the run.
  const engines = Object.entries(seen.preflight).filter(([d]) => !surgeNames.has(d));
  const refused = preflight ? [] : engines.flatMap(([d, p]) => p.fatal.map((f) => `${d}: ${say(f)}`));
  const said = refused.map((r) => `  ${r}`).join("\n");
  if (refused.length > 0) throw refusal(`${t("serve.enginesRefuse")}\n${said}`);
  // The memory fit: a deployment or a node that cannot fit is refused here, before any node is touched.
  // What the look found running as declared gets a line, not its tables and its set's roll
  // (SM121_RESTART=1 restarts every deployment).
  const steady = new Set(allow.restart ? [] : seen.steady);
  memoryFit(seen, steady);

  // Replicas of one model roll one at a time: each engine depends on the one before it in its set,
  // so that Pulumi itself updates them in turn, and a failed one stops the roll there.
  const roll = process.env["SM121_ROLL"] ?? "one";
  if (roll !== "one" && roll !== "all") {
    throw refusal(t("serve.rollUnknown", { roll }));
  }
  const sets = replicaSets(site, bundles, roll === "all");
  const surges = surgePlans(site, sets, bundles, surgeBundles, recipeDefs, seen);
  for (const p of surges) if (p.verdict.go) p.set.surge = p.bundle.deployment;
  const rolls = rollLines(sets, surges, steady);
  if (rolls.length > 0) void log.info(rolls.join("\n"));
  const places = replicaPlaces(sets, bundles, site.drainS);
  const component = new Site(stack, {
    site,
    recipes: recipeDefs,
    bundles,
    seen,
    places,
    surges,
    connection,
    secrets,
    allow,
    preflight,
    owner: me,
    found: {
      ...(gatewayFound !== undefined && { gateway: gatewayFound }),
      ...(scrapeFound !== undefined && { scrape: scrapeFound }),
    },
    provider,
    ...(hf !== undefined && { hfToken: hf }),
    ...(gatewaySettings !== undefined && { gateway: gatewaySettings }),
    ...(gwConn !== undefined && { gatewayNode: gwConn }),
  });
  registered = component.registered;
  const outputs = (d: Deployment) => ({
    endpoints: d.endpoints,
    servedModel: d.servedModel,
    status: d.status,
    firstToken: d.firstToken,
  });
  // One stack output per deployment: Pulumi prints a changed output whole, so a plan that restarts
  // one deployment shows that one's outputs, not every deployment's in one object.
  const deployments = component.deployments.map((d, i) => [bundles[i]?.deployment ?? String(i), outputs(d)] as const);
  return Object.fromEntries(deployments);
}

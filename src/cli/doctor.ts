/**
 * `sm121 doctor [--node N] [--json]`: per node, what the deployments placed there need: curl
 * (readiness and status run it on the node), docker (docker and script targets) and their images,
 * tmux, git (DGPP provisioning on rank 0), the engine binary of native and tmux targets with the
 * driver's install hint, `sudo -n true`, MemAvailable against the node's memory gate, and the
 * preflight of `pulumi up` itself for each deployment there (so "ready" means that preflight
 * passes); a docker recipe whose engine version is unknown gets the version read from its image.
 * A node that cannot be reached is reported, not thrown: an unknown host key shows its
 * fingerprint and how to accept it. Exit 1 when any node has a problem.
 */
import { driverFor } from "../engines";
import type { Recipe, SiteNode } from "../recipe/types";
import { fitOf, type NodeModelFacts } from "../render/memfit";
import { addModelFact, modelFactsScript } from "../serve/modelprobe";
import { fitChecks, fitTable } from "./fit";
import { nodeConn } from "../render/node";
import { imageVersion } from "../engines/options/versions";
import type { Host } from "../remote";
import { describeCheck, parseProbe } from "../serve/probe";
import { preflightScript } from "../serve/steps";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { nodePath, quote } from "../text/shell";
import { bool, str, type Parsed } from "./args";
import { doctorFabric } from "../fabric/doctor.cli";
import { hostKeyFix, loginCheck, loginLines, planRefusals } from "./doctorplan";
import { loginWays } from "../remote/login";
import { cliAuth, connectFailure, hostKeyRefusalOf, selectedNode, withNodes, type Reached } from "./connect";
import { contextProject, type CliContext } from "./context";
import { say, t } from "../text/messages";
import { jsonOut } from "./schemas";
import { doctorSchema, type DoctorCheck, type DoctorNode, type DoctorReport } from "./doctorschema";
import { doctorText } from "./table";
import { printRecord } from "../protocol";
import { tripwireOf } from "../targets/tripwire";
import { wedgeChecks, wedgeScript } from "./doctorwedge";

interface Need {
  check: Exclude<DoctorCheck["check"], "login" | "memory" | "memory-fit" | "preflight" | "engine-version" | "wedge">;
  subject: string;
  /** A shell condition, true when the need is met. */
  test: string;
  severity: DoctorCheck["severity"];
  hint: string | null;
  deployments: string[];
}

const commandTest = (c: string) =>
  c.includes("/") ? `[ -x ${nodePath(c)} ]` : `command -v ${quote(c)} >/dev/null 2>&1`;

/** What the deployments on one node need from it. A node without deployments gets warnings only. */
export function needsOf(
  node: SiteNode,
  placed: ReadonlyArray<{ b: DeploymentBundle; nb: NodeBundle }>,
  recipes: ReadonlyMap<string, Recipe>,
): Need[] {
  const needs = new Map<string, Need>();
  const used = placed.length > 0;
  const add = (n: Omit<Need, "deployments">, deployment?: string) => {
    const key = `${n.check} ${n.subject}`;
    const have = needs.get(key);
    if (have === undefined) needs.set(key, { ...n, deployments: deployment === undefined ? [] : [deployment] });
    else {
      if (deployment !== undefined && !have.deployments.includes(deployment)) have.deployments.push(deployment);
      if (n.severity === "problem") have.severity = "problem";
    }
  };
  const cmd = (c: string, hint: string, deployment?: string) =>
    add(
      { check: "command", subject: c, test: commandTest(c), severity: used ? "problem" : "warning", hint },
      deployment,
    );
  cmd("curl", t("doctor.hintInstall", { pkg: "curl" }));
  add({
    check: "sudo",
    subject: "sudo -n true",
    test: "sudo -n true >/dev/null 2>&1",
    severity: "warning",
    hint: t("doctor.hintSudo", { node: node.name }),
  });
  for (const { b, nb } of placed) {
    const d = b.deployment;
    if (b.hooks.beforeServe.concat(b.hooks.afterStop).some((h) => /\bsudo\b/.test(h))) {
      add(
        {
          check: "sudo",
          subject: "sudo -n true",
          test: "sudo -n true >/dev/null 2>&1",
          severity: "problem",
          hint: t("doctor.hintSudo", { node: node.name }),
        },
        d,
      );
    }
    if (b.deploy === "docker" || b.deploy === "script") cmd("docker", t("doctor.hintDocker"), d);
    if (b.deploy === "tmux") cmd("tmux", t("doctor.hintInstall", { pkg: "tmux" }), d);
    for (const c of nb.preflight) {
      if (c.kind === "image")
        add(
          {
            check: "image",
            subject: c.subject,
            test: `docker image inspect ${quote(c.subject)} >/dev/null 2>&1`,
            severity: "problem",
            hint: t("doctor.hintPull", { image: c.subject, node: node.name }),
          },
          d,
        );
      // The head-coordinated engine's checkout (DGPP); a script recipe's directory is its own check.
      if (c.kind === "dir" && b.shape === "head-coordinated")
        add(
          {
            check: "dir",
            subject: c.subject,
            test: `[ -d ${nodePath(c.subject)} ]`,
            severity: "problem",
            hint: say(driverFor(b.engine).installHint),
          },
          d,
        );
      // The engine binary of a native or tmux launch, as the bundle's preflight names it.
      if (c.kind === "command")
        add(
          {
            check: "engine",
            subject: c.subject,
            test: commandTest(c.subject),
            severity: "problem",
            hint: say(driverFor(b.engine).installHint),
          },
          d,
        );
    }
    const dgpp = recipes.get(b.recipe)?.dgpp;
    if (nb.rank === 0 && dgpp?.repo !== undefined) cmd("git", t("doctor.hintInstall", { pkg: "git" }), d);
  }
  return [...needs.values()];
}

export function doctorScript(needs: readonly Need[], placed: ReadonlyArray<{ nb: NodeBundle }>): string {
  const need = (i: number, ok: boolean) => printRecord("need", `"index":${i},"ok":${ok}`);
  const lines = needs.map((n, i) => `if ${n.test}; then ${need(i, true)}; else ${need(i, false)}; fi`);
  lines.push("mem=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)");
  const wsf = '"$(sysctl -n vm.watermark_scale_factor 2>/dev/null || true)"';
  lines.push(printRecord("nodeMemory", '"memKiB":%s,"wsf":"%s"', `"\${mem:-null}" ${wsf}`));
  // The memory fit's facts: MemTotal, and the checkpoint's config and size in the HF cache.
  lines.push(placed[0] === undefined ? "" : modelFactsScript(placed[0].nb, placed[0].nb.rank === 0));
  // A running engine holds memory: the gate applies when one starts. Status scripts that ask the
  // engine's API (DGPP) are not run: doctor sends no HTTP request.
  for (const { nb } of placed) {
    if (nb.statusAsksApi) continue;
    lines.push(`if ( ${nb.status} ) 2>/dev/null | grep -q '"running":true'; then ${printRecord("engineRunning")}; fi`);
  }
  lines.push(wedgeScript(placed));
  return lines.join("\n");
}

interface NodeInput {
  node: SiteNode;
  placed: Array<{ b: DeploymentBundle; nb: NodeBundle }>;
  recipes: ReadonlyMap<string, Recipe>;
  gateGiB: number;
  /** The memory tripwire's floor on the node. */
  floorGiB: number;
  knownHosts: string;
}

async function doctorNode(r: Reached | undefined, o: NodeInput, facts: NodeModelFacts): Promise<DoctorNode> {
  const { node, placed, recipes, gateGiB } = o;
  const base = { node: node.name, protected: node.protected };
  if (r === undefined || !r.ok) {
    const message = r?.error.message ?? "not connected";
    const kind = r === undefined ? "unreachable" : connectFailure(r.error);
    const refusal = r === undefined ? undefined : hostKeyRefusalOf(r.error);
    const fix = kind === "host-key" ? hostKeyFix(refusal, nodeConn(node), o.knownHosts) : null;
    const connect = { kind, message, fingerprint: refusal?.fingerprint ?? null, fix };
    return { ...base, reachable: false, connect, checks: [], problems: 1, warnings: 0 };
  }
  const needs = needsOf(node, placed, recipes);
  const login = loginCheck(
    r.host,
    nodeConn(node),
    placed.map((x) => x.b.deployment),
  );
  const res = await r.host.run(doctorScript(needs, placed), { step: "doctor", allowFailure: true, timeoutMs: 60_000 });
  const met = new Map<number, boolean>();
  let memKiB: number | undefined;
  let wsf = "";
  let running = false;
  for (const rec of res.records) {
    if (addModelFact(facts, rec)) continue;
    if (rec.kind === "need") met.set(rec.index, rec.ok);
    else if (rec.kind === "nodeMemory") {
      if (rec.memKiB !== null) memKiB = rec.memKiB;
      wsf = rec.wsf;
    } else if (rec.kind === "engineRunning") running = true;
  }
  const checks: DoctorCheck[] = [login];
  needs.forEach((n, i) => {
    const ok = met.get(i) === true;
    checks.push({
      check: n.check,
      subject: n.subject,
      ok,
      severity: n.severity,
      detail: ok ? null : t("doctor.missing"),
      hint: n.hint,
      deployments: n.deployments,
    });
  });
  const gib = memKiB === undefined ? undefined : Math.round((memKiB / 1048576) * 10) / 10;
  const memOk = gib !== undefined && gib >= gateGiB;
  const detail =
    gib === undefined
      ? t("doctor.memUnknown")
      : t("doctor.memDetail", { mem: gib, gate: gateGiB, wsf: wsf || "?" }) +
        (!memOk && running ? `; ${t("doctor.memEngineRuns")}` : "");
  checks.push({
    check: "memory",
    subject: "MemAvailable",
    ok: memOk || running,
    severity: placed.length > 0 ? "problem" : "warning",
    detail,
    hint: t("doctor.hintMemory", { node: node.name }),
    deployments: placed.map((x) => x.b.deployment),
  });
  const deployments = placed.map((x) => x.b.deployment);
  const hostIpc = placed.some((x) => x.b.deploy === "docker");
  checks.push(
    ...wedgeChecks(res.records, { node: node.name, gateGiB, floorGiB: o.floorGiB, wsf, hostIpc, deployments }),
  );
  // What doctor checked itself (with its hint) is not counted twice.
  const own = new Set(needs.map((n) => n.subject));
  for (const x of placed) checks.push(...(await preflightChecks(r.host, x.b, x.nb, own)));
  for (const x of placed) {
    const v = await imageVersionCheck(r.host, x.b, x.nb, recipes.get(x.b.recipe));
    if (v !== undefined) checks.push(v);
  }
  const bad = checks.filter((c) => !c.ok);
  return {
    ...base,
    reachable: true,
    connect: null,
    checks,
    problems: bad.filter((c) => c.severity === "problem").length,
    warnings: bad.filter((c) => c.severity === "warning").length,
  };
}

/**
 * The preflight of `pulumi up` itself (serve/steps.ts, read-only) for each deployment on the node:
 * doctor's "ready" means that preflight passes. A fatal finding is a problem, the others warnings.
 */
async function preflightChecks(
  host: Host,
  b: DeploymentBundle,
  nb: NodeBundle,
  own: ReadonlySet<string>,
): Promise<DoctorCheck[]> {
  const script = preflightScript(nb, [], undefined, { checks: true, runStatus: false, clients: false });
  const res = await host.run(script, { step: "preflight", allowFailure: true, timeoutMs: 60_000 });
  const failed = parseProbe(res.records).failed.filter((f) => !own.has(f.subject));
  const check = (severity: DoctorCheck["severity"], found: typeof failed): DoctorCheck => ({
    check: "preflight",
    subject: b.deployment,
    ok: found.length === 0,
    severity,
    detail: found.length === 0 ? t("doctor.preflight") : found.map((f) => say(describeCheck(f))).join("; "),
    hint: null,
    deployments: [b.deployment],
  });
  const warnings = failed.filter((f) => !f.fatal);
  const problems = check(
    "problem",
    failed.filter((f) => f.fatal),
  );
  return warnings.length > 0 ? [problems, check("warning", warnings)] : [problems];
}

/**
 * A docker recipe whose engine version is neither in the recipe nor known from its image tag: the
 * version read from the image on rank 0 (the package's metadata, with no GPU and no model), and the
 * line to add to the recipe.
 */
async function imageVersionCheck(
  host: Host,
  b: DeploymentBundle,
  nb: NodeBundle,
  recipe: Recipe | undefined,
): Promise<DoctorCheck | undefined> {
  const image = recipe?.image;
  const engine = recipe?.engine;
  const known = recipe?.engineVersion !== undefined || (image !== undefined && imageVersion(image) !== undefined);
  if (nb.rank !== 0 || image === undefined || known || (engine !== "vllm" && engine !== "sglang")) return undefined;
  const py = `import importlib.metadata as m; print(m.version(${JSON.stringify(engine)}))`;
  const read = [
    "docker run --rm --network none --entrypoint python3",
    quote(image),
    "-c",
    quote(py),
    "2>/dev/null || true",
  ].join(" ");
  const res = await host.run(read, { step: "engine version", allowFailure: true, timeoutMs: 120_000 });
  const version = /^\d+\.\d+\.\d+\S*$/m.exec(res.stdout)?.[0];
  const said = { image, engine, file: recipe?.file ?? b.recipeFile };
  return {
    check: "engine-version",
    subject: image,
    ok: false,
    severity: "warning",
    detail: version === undefined ? t("doctor.versionUnknown", said) : t("doctor.versionFound", { ...said, version }),
    hint: null,
    deployments: [b.deployment],
  };
}

/** Each deployment's memory fit over what the nodes reported: a check on each reached node, and the table. */
function addFitChecks(
  bundles: readonly DeploymentBundle[],
  recipes: ReadonlyMap<string, Recipe>,
  facts: Readonly<Record<string, NodeModelFacts>>,
  results: DoctorNode[],
): DoctorReport["memoryFit"] {
  return bundles.map((b) => {
    const fit = fitOf(b, recipes.get(b.recipe), facts);
    const checks = fitChecks(fit, b.recipeFile);
    for (const r of results) {
      const c = checks.get(r.node);
      if (c === undefined || !r.reachable) continue;
      r.checks.push(c);
      if (!c.ok) {
        if (c.severity === "problem") r.problems++;
        else r.warnings++;
      }
    }
    return { deployment: b.deployment, verdict: fit.verdict, lines: fitTable(fit, b.recipeFile) };
  });
}

export async function doctorCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const fabric = str(p, "fabric");
  if (fabric !== undefined) return doctorFabric(ctx, p, fabric);
  const project = contextProject(ctx);
  const site = project.site;
  const only = selectedNode(site, p);
  const nodes = Object.values(site.nodes).filter((n) => only === undefined || n.name === only);
  const placedOn = (n: SiteNode) =>
    project.bundles.flatMap((b) => b.nodes.filter((nb) => nb.node === n.name).map((nb) => ({ b, nb })));
  const { auth, login } = cliAuth(site, p, process.env, ctx.pulumi);
  const report = await withNodes(
    nodes.map((n) => ({ node: n.name, conn: nodeConn(n) })),
    auth,
    async (reached): Promise<DoctorReport> => {
      const facts: Record<string, NodeModelFacts> = Object.fromEntries(nodes.map((n) => [n.name, {}]));
      const results = await Promise.all(
        nodes.map((n) => {
          const placed = placedOn(n);
          const gate = placed[0]?.nb.memGateGiB ?? n.minMemAvailableGiB ?? site.minMemAvailableGiB;
          return doctorNode(
            reached.get(n.name),
            {
              node: n,
              placed,
              recipes: project.recipes,
              gateGiB: gate,
              floorGiB: tripwireOf(site, n).floorGiB,
              knownHosts: auth.knownHosts,
            },
            facts[n.name] ?? {},
          );
        }),
      );
      const memoryFit = addFitChecks(
        project.bundles.filter((b) => b.nodes.some((nb) => nb.node in facts)),
        project.recipes,
        facts,
        results,
      );
      // What the plan refuses that no node's check names: doctor is never "ready" where the plan refuses.
      const plan = await planRefusals(project, facts, auth);
      const ok = results.every((r) => r.problems === 0) && plan.length === 0;
      const keys = { offered: loginWays(login), skipped: login.skipped.map((m) => say(m)) };
      return { stack: ctx.stack, ok, login: keys, nodes: results, plan, memoryFit };
    },
  );
  if (bool(p, "json")) ctx.out(jsonOut(doctorSchema(), report));
  else {
    for (const l of loginLines(login)) ctx.out(l);
    for (const l of doctorText(report)) ctx.out(l);
    for (const f of report.memoryFit) for (const l of ["", ...f.lines]) ctx.out(l);
  }
  return report.ok ? 0 : 1;
}

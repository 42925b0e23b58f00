/**
 * The site: nodes and deployments, in the stack's configuration under the `sm121:` namespace (the
 * stack file `Pulumi.<stack>.yaml`, or wherever Pulumi resolves it from: see siteSource.ts). The
 * Pulumi program and the CLI read it with this one schema.
 */
import { readFileSync } from "node:fs";
import { MAX_ERRORS, SpecError, throwIfAny } from "./errors";
import { msg, type Msg } from "../text/messages";
import { issueToSpecError, keysAt } from "./issues";
import { dotted, protoKeys, type FieldPath } from "./locate";
import { spareOf } from "./spare";
import { SECRET_CONFIG_KEYS, stackFileSource, type SiteSource } from "./siteSource";
import type { Site, SiteNode, SshResolver } from "./types";
import { siteSchema } from "./siteschema";

/** Parses the stack config text of `Pulumi.<stack>.yaml`. Throws SpecError or SpecErrors. */
export function parseSite(file: string, stack: string, text: string, ssh?: SshResolver): Site {
  return siteFrom(stackFileSource({ file, text }), stack, ssh);
}

/** A written `ssh` block as it stands: port 22 where it names none (ssh(1)'s default). */
const asWritten: SshResolver = (w) => ({
  host: w.host,
  port: w.port ?? 22,
  ...(w.user !== undefined && { user: w.user }),
});

/**
 * The site of a stack from its source (the stack file, or Pulumi's resolved configuration). Throws
 * SpecError or SpecErrors.
 */
export function siteFrom(source: SiteSource, stack: string, ssh: SshResolver = asWritten): Site {
  const { file, raw, locate } = source;
  throwIfAny(
    protoKeys(raw).map(
      (p) =>
        new SpecError({
          ...locate(p),
          field: `sm121:${dotted(p)}`,
          problem: msg("spec.proto"),
          fix: msg("spec.protoFix"),
        }),
    ),
  );
  const schema = siteSchema();
  const parsed = schema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    // The secrets are config keys too, read through Pulumi rather than this schema.
    const knownKeys = (p: FieldPath) =>
      p.length === 0 ? [...keysAt(schema, p), ...SECRET_CONFIG_KEYS] : keysAt(schema, p);
    throwIfAny(
      parsed.error.issues
        .slice(0, MAX_ERRORS + 1)
        .flatMap((i) => issueToSpecError(i, file, locate, knownKeys, "sm121:")),
    );
    throw new Error("unreachable: zod failed without issues");
  }
  const s = parsed.data;
  const errors: SpecError[] = [];
  const err = (path: FieldPath, problem: Msg, fix: Msg) => {
    if (errors.length <= MAX_ERRORS)
      errors.push(new SpecError({ ...locate(path), field: `sm121:${dotted(path)}`, problem, fix }));
  };
  const nodes: Record<string, SiteNode> = {};
  for (const [name, n] of Object.entries(s.nodes)) {
    if (n.host === "ssh" && n.ssh === undefined)
      err(["nodes", name, "host"], msg("spec.site.needsSsh"), msg("spec.site.needsSshFix"));
    const to = n.ssh === undefined ? undefined : ssh(n.ssh);
    if (n.ssh !== undefined && to?.user === undefined)
      err(["nodes", name, "ssh"], msg("spec.site.noUser"), msg("spec.site.noUserFix", { host: n.ssh.host }));
    const alias = n.ssh !== undefined && to !== undefined && to.host !== n.ssh.host ? { alias: n.ssh.host } : {};
    nodes[name] = {
      name,
      host: n.host,
      ...(to !== undefined && { ssh: { host: to.host, port: to.port, user: to.user ?? "", ...alias } }),
      ip: n.ip,
      protected: n.protected,
      env: n.env,
      vars: n.vars,
      ...(n.gatewayUrl !== undefined && { gatewayUrl: n.gatewayUrl }),
      ...(n.gpuProbe !== undefined && { gpuProbe: n.gpuProbe }),
      ...(n.minMemAvailableGiB !== undefined && { minMemAvailableGiB: n.minMemAvailableGiB }),
      ...(n.memFloorGiB !== undefined && { memFloorGiB: n.memFloorGiB }),
      ...(n.memRelief !== undefined && { memRelief: n.memRelief }),
      recipes: n.recipes,
      stateDir: n.stateDir,
      ...(n.fabric !== undefined && { fabric: n.fabric }),
      gpus: n.gpus,
    };
  }
  const deployments = s.deployments.flatMap((d, i) => {
    const base = d.name ?? (d.profile === undefined ? d.recipe : `${d.recipe}-${d.profile}`);
    if (d.nodes !== undefined && d.replicas !== undefined) {
      err(["deployments", i], msg("spec.site.nodesAndReplicas"), msg("spec.site.nodesAndReplicasFix"));
      return [];
    }
    const groups = d.replicas ?? [d.nodes ?? []];
    const owner = new Map<string, number>();
    return groups.map((nodeList, r) => {
      const nodesAt = d.replicas === undefined ? ["deployments", i, "nodes"] : ["deployments", i, "replicas", r];
      for (const [j, n] of nodeList.entries()) {
        const at = [...nodesAt, j];
        const known = msg("spec.site.unknownNodeFix", { nodes: Object.keys(nodes).join(", ") });
        if (!Object.hasOwn(nodes, n)) err(at, msg("spec.site.unknownNode", { node: n }), known);
        if (nodeList.indexOf(n) !== j) err(at, msg("spec.site.nodeTwice", { node: n }), msg("spec.site.nodeTwiceFix"));
        const other = owner.get(n);
        if (other !== undefined && other !== r) {
          err(
            at,
            msg("spec.site.sharedReplica", { node: n, a: other + 1, b: r + 1, deployment: base }),
            msg("spec.site.sharedReplicaFix"),
          );
        }
        owner.set(n, r);
      }
      const name = d.replicas === undefined ? base : `${base}-${r + 1}`;
      return {
        name,
        recipe: d.recipe,
        nodes: nodeList,
        overlayWins: d.overlayWins,
        at: { entry: ["deployments", i], nodes: nodesAt },
        ...(d.replicas !== undefined && { replicaOf: base }),
        ...(d.roll !== undefined && { roll: d.roll }),
        ...(d.profile !== undefined && { profile: d.profile }),
        ...(d.overlay !== undefined && { overlay: d.overlay }),
      };
    });
  });
  const spares = s.deployments.flatMap((d, i) => spareOf(d, i, nodes, err));
  const seen = new Map<string, number>();
  for (const d of [...deployments, ...spares.map((x) => x.deployment)]) {
    const i = Number(d.at.entry[1]);
    const prev = seen.get(d.name);
    const used = msg("spec.site.nameTaken", { name: d.name, index: prev ?? 0 });
    if (prev !== undefined) err(d.at.entry, used, msg("spec.site.nameTakenFix"));
    seen.set(d.name, i);
  }
  if (s.gateway?.node !== undefined && !Object.hasOwn(nodes, s.gateway.node))
    err(["gateway", "node"], msg("spec.site.unknownNode", { node: s.gateway.node }), msg("spec.site.fileNodeFix"));
  const scrapeNode = s.scrapeTargets?.node;
  if (scrapeNode !== undefined && !Object.hasOwn(nodes, scrapeNode)) {
    err(["scrapeTargets", "node"], msg("spec.site.unknownNode", { node: scrapeNode }), msg("spec.site.fileNodeFix"));
  }
  throwIfAny(errors);
  const site: Site = {
    file,
    locate,
    stack,
    nodes,
    deployments,
    minMemAvailableGiB: s.minMemAvailableGiB,
    memTimeoutS: s.memTimeoutS,
    readyGraceS: s.readyGraceS,
    recipesDir: s.recipesDir,
    knownHosts: s.knownHosts,
    hostKeys: s.hostKeys,
    rollback: s.rollback,
    dgppPollS: s.dgppPollS,
    preflight: s.preflight,
    lockWaitS: s.lockWaitS,
    hooks: s.hooks,
    keepBackups: s.keepBackups,
    drainS: s.drainS,
    spares,
    modelCache: s.modelCache,
    imageSync: s.imageSync,
    requireApiKey: s.requireApiKey,
    fabric: { ...s.fabric, check: s.fabricCheck },
    tripwire: { floorGiB: s.memFloorGiB, sampleS: s.memSampleS, relief: s.memRelief },
    keep: s.keep,
    liveness: { timeoutS: s.liveness.timeout, maxRestarts: s.liveness.maxRestarts, windowS: s.liveness.windowS },
    ...(s.gateway !== undefined && { gateway: s.gateway }),
    ...(s.scrapeTargets !== undefined && { scrapeTargets: s.scrapeTargets }),
  };
  return site;
}

export function readSite(path: string, stack: string, displayPath: string = path, ssh?: SshResolver): Site {
  return parseSite(displayPath, stack, readFileSync(path, "utf8"), ssh);
}

/**
 * Plan time: one read-only look at every node of the site, before Pulumi diffs anything. One SSH
 * connection per node, all nodes in parallel, one script each (the preflight probe of the
 * deployment the node serves, or only the list of what sm121 holds there). What it finds becomes
 * words in the plan and the reason an up repairs a node: an engine that died, a file edited on
 * the node, a node that still runs another deployment. The resources' diffs stay pure: they only
 * read what this look found, as an input.
 */
import { connect, type Host, type SshAuth } from "../remote";
import type { SiteNode } from "../recipe/types";
import type { NodeModelFacts } from "../render/memfit";
import { nodeConn } from "../render/node";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { joinNode } from "../text/shell";
import { describeCheck, driftOf, envKeyDiff, parseProbe, probeNode, type NodeState } from "./probe";
import { ownerDrift, sameOwner, type Holder, type Owner } from "./owner";
import { othersProbe } from "./registry";

export interface SiteObservation {
  /** Per deployment: what this up will repair or stop first, one line per finding ("spark2: ..."). */
  drift: Record<string, string[]>;
  /**
   * Per deployment: preflight findings (fatal ones fail a preview with sm121:preflight), and
   * notes that are no fault (the .env key diff against the node).
   */
  preflight: Record<string, { fatal: string[]; warnings: string[]; notes: string[] }>;
  /**
   * Deployments of this stack (or of no recorded owner) a node holds although the site no longer
   * puts them there: this up stops them. Another stack's are left alone, and not listed.
   */
  leaving: Array<{ node: string; deployment: string; protected: boolean }>;
  /** Per node the look reached: every deployment directory there, with its owner (serve/owner). */
  holders: Record<string, Holder[]>;
  /** Per node: its memory and the checkpoint's files in its HF cache (the memory fit's facts). */
  models: Record<string, NodeModelFacts>;
}

type Seen = { ok: true; state: NodeState } | { ok: false; error: string };

async function look(name: string, node: SiteNode, nb: NodeBundle | undefined, auth: SshAuth, checks: boolean): Promise<Seen> {
  let host: Host | undefined;
  try {
    host = await connect(name, nodeConn(node), auth);
    if (nb !== undefined) return { ok: true, state: await probeNode(host, nb, { checks, clients: false }) };
    const res = await host.run(othersProbe(joinNode(node.stateDir, "deployments"), undefined), { step: "list sm121's deployments" });
    return { ok: true, state: parseProbe(res.records, res.stdout) };
  } catch (e) {
    return { ok: false, error: (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "" };
  } finally {
    host?.close();
  }
}

/**
 * `checks`: also run the preflight checks (a preview with sm121:preflight); else only the nodes'
 * state is read. `me`: this run's stack, against which the owners found on the nodes are read.
 */
export async function observeSite(
  nodes: Readonly<Record<string, SiteNode>>,
  bundles: readonly DeploymentBundle[],
  auth: SshAuth,
  checks: boolean,
  me?: Owner,
): Promise<SiteObservation> {
  const serving = new Map<string, { b: DeploymentBundle; nb: NodeBundle }>();
  for (const b of bundles) for (const nb of b.nodes) serving.set(nb.node, { b, nb });
  const names = Object.keys(nodes);
  const seen = await Promise.all(names.map((n) => look(n, nodes[n] as SiteNode, serving.get(n)?.nb, auth, checks)));
  const byNode = new Map(names.map((n, i) => [n, seen[i] as Seen]));
  const out: SiteObservation = { drift: {}, preflight: {}, leaving: [], models: {}, holders: {} };
  for (const b of bundles) {
    const drift: string[] = [];
    const pre = { fatal: [] as string[], warnings: [] as string[], notes: [] as string[] };
    for (const nb of b.nodes) {
      const s = byNode.get(nb.node);
      if (s === undefined) continue;
      if (!s.ok) {
        drift.push(`${nb.node}: unreachable (${s.error})`);
        continue;
      }
      for (const o of s.state.others) drift.push(`${nb.node}: stops deployment ${o} first (the node now serves ${b.deployment})`);
      for (const w of driftOf(nb, s.state)) drift.push(`${nb.node}: ${w}`);
      if (me !== undefined) drift.push(...ownerDrift(nb.node, b.deployment, s.state.holders, me));
      for (const f of s.state.failed) (f.fatal ? pre.fatal : pre.warnings).push(`${nb.node}: ${describeCheck(f)}`);
      const keys = envKeyDiff(nb, s.state);
      if (keys !== undefined) pre.notes.push(`${nb.node}: ${keys}`);
    }
    out.drift[b.deployment] = drift;
    out.preflight[b.deployment] = pre;
  }
  for (const [name, s] of byNode) {
    if (s.ok && s.state.model !== undefined) out.models[name] = s.state.model;
    if (s.ok) out.holders[name] = s.state.holders;
    if (!s.ok || serving.has(name)) continue;
    for (const d of s.state.others) {
      const owner = s.state.holders.find((h) => h.deployment === d)?.owner;
      if (me !== undefined && owner !== undefined && !sameOwner(owner, me)) continue;
      out.leaving.push({ node: name, deployment: d, protected: nodes[name]?.protected === true });
    }
  }
  return out;
}

/**
 * A node belongs to the stack that serves it. Each deployment's directory on a node records its
 * owner (`owner.json`: project, stack and the backend's identity), written with its stop.sh. A
 * plan of another stack that would stop a deployment it does not own is refused before anything
 * is touched, naming the owner, the node and how to hand the node over; SM121_ALLOW_TAKEOVER=<node>
 * allows it for one run. A marker written before owners were recorded has none, and is taken as
 * any stack's (an upgrade refuses nothing).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { msg, t, type Msg } from "../text/messages";
import { withoutCredentials } from "../text/secrets";

export interface Owner {
  project: string;
  stack: string;
  /** The backend's URL without user or password (file://..., https://api.pulumi.com, ...). */
  backend: string;
}

/** What the look found of one deployment on a node. */
export interface Holder {
  deployment: string;
  /** Its stop.sh is there: something of it may run. */
  held: boolean;
  owner?: Owner;
  /** It was stopped there by another deployment taking the node (registry displaceScript). */
  displacedBy?: { deployment: string; owner?: Owner };
}

export function sameOwner(a: Owner, b: Owner): boolean {
  return a.project === b.project && a.stack === b.stack && a.backend === b.backend;
}

/**
 * The owner is this stack as it was recorded from another backend: the stack moved there since
 * (`pulumi stack export` / `import`, docs/team.md), or a copy of it still lives there. Only the
 * operator knows which: the move is recorded on the node with SM121_ALLOW_TAKEOVER, once, and
 * restarts nothing (the directory keeps no `taken-from.json`: there is no other stack to hand it
 * back to).
 */
export function movedFrom(o: Owner, me: Owner): boolean {
  return o.project === me.project && o.stack === me.stack && o.backend !== me.backend;
}

/** `stack other (project sm121)`, with the backend when it is not this run's. */
function ownerWords(o: Owner, me: Owner): string {
  return o.backend === me.backend
    ? t("serve.ownerIn", { stack: o.stack, project: o.project })
    : t("serve.ownerInBackend", { stack: o.stack, project: o.project, backend: o.backend });
}

/**
 * A backend URL as an identity: never with the credentials a URL may carry (a user, a password,
 * a `?password=` or `?token=` query: text/secrets withoutCredentials), so that it can go into
 * every node's owner.json, the state and a message.
 */
export function backendIdentity(url: string): string {
  try {
    return new URL(withoutCredentials(url)).toString().replace(/\/$/, "");
  } catch {
    return url;
  }
}

/**
 * The backend this run's state lives in, as the Pulumi CLI chose it: PULUMI_BACKEND_URL, else the
 * project's `backend.url` (Pulumi.yaml, `project`), else the `current` backend of `pulumi login`
 * (PULUMI_HOME's credentials.json; only that field is read).
 */
export function currentBackend(env: NodeJS.ProcessEnv, home: string, project?: string): string {
  const url = env["PULUMI_BACKEND_URL"];
  if (url !== undefined && url !== "") return backendIdentity(url);
  if (project !== undefined && project !== "") return backendIdentity(project);
  try {
    const file = join(env["PULUMI_HOME"] ?? join(home, ".pulumi"), "credentials.json");
    const current: unknown = (JSON.parse(readFileSync(file, "utf8")) as { current?: unknown }).current;
    if (typeof current === "string" && current !== "") return backendIdentity(current);
  } catch {
    // No login recorded: the backend stays unnamed.
  }
  return "unknown";
}

/** Parses an owner record's value; undefined for anything else (a hand edit, an older marker). */
export function ownerOf(v: unknown): Owner | undefined {
  if (v === null || typeof v !== "object") return undefined;
  const o = v as Record<string, unknown>;
  const [project, stack, backend] = [o["project"], o["stack"], o["backend"]];
  if (typeof project !== "string" || typeof stack !== "string" || typeof backend !== "string") return undefined;
  // A record an older sm121 wrote may hold a backend's password: it is compared and said without it.
  return { project, stack, backend: backendIdentity(backend) };
}

/** The refusal of a run that would stop `h` on `node`, a deployment of another stack. */
export function takeoverRefusal(node: string, h: Holder & { owner: Owner }, me: Owner): string {
  const { stack, backend } = h.owner;
  if (movedFrom(h.owner, me)) return t("serve.takeoverMoved", { node, stack, backend });
  const here = h.owner.project === me.project && h.owner.backend === me.backend;
  const who = { node, deployment: h.deployment, owner: ownerWords(h.owner, me), stack };
  return here ? t("serve.takeoverRefused", who) : t("serve.takeoverRefusedThere", who);
}

/** Foreign deployments that may run on a node (stop.sh there, another owner): what a run there would stop. */
export function foreignHolders(holders: readonly Holder[], me: Owner): Array<Holder & { owner: Owner }> {
  const foreign = (h: Holder): h is Holder & { owner: Owner } =>
    h.held && h.owner !== undefined && !sameOwner(h.owner, me);
  return holders.filter(foreign);
}

/**
 * The owner's plan, as messages, where another stack took a node of `deployment`: the node now
 * serves the other stack's deployment, or did until it left, having stopped this one.
 */
export function ownerDrift(node: string, deployment: string, holders: readonly Holder[], me: Owner): Msg[] {
  const own = holders.find((h) => h.deployment === deployment);
  if (own === undefined) return [];
  const foreign = (o: Owner | undefined): o is Owner => o !== undefined && !sameOwner(o, me);
  if (own.owner !== undefined && movedFrom(own.owner, me)) {
    return [msg("serve.look.ownerMoved", { node, deployment, backend: own.owner.backend, me: me.backend })];
  }
  if (foreign(own.owner)) return [msg("serve.look.ownerServes", { node, deployment, stack: own.owner.stack })];
  const by = own.displacedBy;
  if (by === undefined || !foreign(by.owner)) return [];
  const still = holders.some((h) => h.deployment === by.deployment && h.held);
  const stack = by.owner.stack;
  if (still) return [msg("serve.look.ownerServes", { node, deployment: by.deployment, stack })];
  return [msg("serve.look.ownerLeft", { node, deployment, by: by.deployment, stack })];
}

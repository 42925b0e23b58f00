/**
 * `sm121 init`'s look at a node and the stack file it writes from what it found. The look is one
 * read-only script over the node's own SSH connection; each fact it finds is checked against what
 * it must be (a path, an address, a name, a version) and goes into the stack file, written with
 * the YAML library, with a comment that says where it came from, so the operator can check it
 * line by line.
 */
import { Document, Pair, Scalar, YAMLMap, YAMLSeq } from "yaml";
import { imageVersion } from "../engines/options/versions";
import { FABRIC_NAME } from "../fabric/site.recipe";
import { IPV4, NODE_PATH } from "../recipe/siteschema";
import type { Host } from "../remote";
import { firstRecord, printRecord } from "../protocol";
import { msg, type MessageKey, type Msg } from "../text/messages";

export interface NodeFacts {
  name: string;
  /** The host as --nodes names it, and where ssh reached it (~/.ssh/config's HostName, else the same). */
  host: string;
  address: string;
  port: number;
  user: string;
  home: string;
  hfHome: string;
  hfExists: boolean;
  memTotalGiB?: number;
  memAvailableGiB?: number;
  gpus: string[];
  docker?: string;
  images: string[];
  /** The cluster interface and its address, and how it was found. */
  nic?: { dev: string; addr: string; via: "rdma" | "ssh" };
}

const b64 = (s: unknown): string => Buffer.from(typeof s === "string" ? s : "", "base64").toString("utf8");

/**
 * The node's facts, read-only: its home and HF cache, memory (`free -b`, as the memory fit reads
 * it; MemAvailable for the gate), GPUs (`nvidia-smi -L`), docker and its images, and the cluster
 * interface: the first RDMA device's netdev with an IPv4 address (a Spark's ConnectX-7), else the
 * interface that holds the address this SSH connection reached.
 */
export const FACTS_SCRIPT = [
  'hf=${HF_HOME:-$HOME/.cache/huggingface}; if [ -d "$hf" ]; then hfe=true; else hfe=false; fi',
  printRecord(
    "siteHome",
    '"home64":"%s","hf64":"%s","hfExists":%s',
    '"$(printf %s "$HOME" | base64 -w0)" "$(printf %s "$hf" | base64 -w0)" "$hfe"',
  ),
  "total=$(free -b 2>/dev/null | awk '/^Mem:/ {print $2}') || total=",
  "avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null) || avail=",
  printRecord("siteMemory", '"memTotal":%s,"memAvailableKiB":%s', '"${total:-null}" "${avail:-null}"'),
  "gpus=$(nvidia-smi -L 2>/dev/null || true)",
  printRecord("siteGpus", '"gpus64":"%s"', '"$(printf %s "$gpus" | base64 -w0)"'),
  "dv=$(docker version --format '{{.Server.Version}}' 2>/dev/null || true); imgs=$(docker images 2>/dev/null || true)",
  printRecord(
    "siteDocker",
    '"docker64":"%s","images64":"%s"',
    '"$(printf %s "$dv" | base64 -w0)" "$(printf %s "$imgs" | base64 -w0)"',
  ),
  "nic=; addr=; via=",
  "devs=$(rdma link show 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == \"netdev\") print $(i + 1)}' || true)",
  "for dev in $devs; do",
  "  a=$(ip -o -4 addr show 2>/dev/null | awk -v d=\"$dev\" '$2 == d {print $4}' | cut -d/ -f1 | head -n 1) || a=",
  '  if [ -n "$a" ]; then nic=$dev; addr=$a; via=rdma; break; fi',
  "done",
  'if [ -z "$nic" ]; then',
  "  addr=$(printf %s \"${SSH_CONNECTION:-}\" | awk '{print $3}')",
  "  nic=$(ip -o route get \"$addr\" 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1) || nic=",
  "  via=ssh",
  "fi",
  printRecord("siteNic", '"nic":"%s","addr":"%s","via":"%s"', '"$nic" "$addr" "$via"'),
].join("\n");

/** What a node said, from the records of FACTS_SCRIPT. */
export async function nodeFacts(
  host: Host,
  base: Pick<NodeFacts, "name" | "host" | "address" | "port" | "user">,
): Promise<NodeFacts> {
  const res = await host.run(FACTS_SCRIPT, { step: "init look", timeoutMs: 60_000 });
  const gib = (v: number | null | undefined) =>
    typeof v === "number" ? Math.round((v / 2 ** 30) * 10) / 10 : undefined;
  const home = firstRecord(res.records, "siteHome");
  const mem = firstRecord(res.records, "siteMemory");
  const nic = firstRecord(res.records, "siteNic");
  const docker = firstRecord(res.records, "siteDocker");
  const memTotalGiB = gib(mem?.memTotal);
  const kib = mem?.memAvailableKiB;
  const memAvailableGiB = gib(typeof kib === "number" ? kib * 1024 : undefined);
  const dev = nic?.nic ?? "";
  const addr = nic?.addr ?? "";
  const dockerVersion = b64(docker?.docker64).trim();
  return {
    ...base,
    home: b64(home?.home64),
    hfHome: b64(home?.hf64),
    hfExists: home?.hfExists === true,
    ...(memTotalGiB !== undefined && { memTotalGiB }),
    ...(memAvailableGiB !== undefined && { memAvailableGiB }),
    gpus: b64(firstRecord(res.records, "siteGpus")?.gpus64)
      .split("\n")
      .filter((l) => /^GPU \d+:/.test(l))
      .map((l) => l.replace(/^GPU \d+: /, "").replace(/ \(UUID: .*\)$/, "")),
    ...(dockerVersion !== "" && { docker: dockerVersion }),
    images: imagesIn(b64(docker?.images64)),
    ...(dev !== "" && addr !== "" && { nic: { dev, addr, via: nic?.via === "rdma" ? "rdma" : "ssh" } }),
  };
}

/** `docker images` as REPOSITORY:TAG (the table every docker prints; its header first). */
function imagesIn(table: string): string[] {
  return table
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((c) => c.length >= 2 && c[0] !== "<none>" && c[1] !== "<none>")
    .map((c) => `${c[0]}:${c[1]}`);
}

/** The recipes init deploys, by the names the shipped recipes/ has. */
export const SOLO_RECIPE = "qwen3-8b-solo";
export const PAIR_RECIPE = "qwen3-32b-vllm-tp2";

export interface StackInput {
  facts: NodeFacts[];
  knownHosts: string;
  /** The images the two recipes run, to say where each is missing. */
  images: Record<string, string>;
  gateway: boolean;
  /** The stack's `encryptionsalt` (pulumi stack init wrote it), kept. */
  salt?: string;
}

/** The memory gate: half the least MemAvailable init found (a new site has no engine running), at most 100 GiB. */
export function gateOf(facts: readonly NodeFacts[]): { gib: number; from?: NodeFacts } {
  const least = facts
    .filter((f) => f.memAvailableGiB !== undefined)
    .sort((a, b) => (a.memAvailableGiB ?? 0) - (b.memAvailableGiB ?? 0))[0];
  if (least?.memAvailableGiB === undefined) return { gib: 100 };
  return { gib: Math.max(1, Math.min(100, Math.floor(least.memAvailableGiB / 2))), from: least };
}

/** A version as docker prints it (28.3.3, 20.10.24+dfsg1). */
const VERSION = /^\d+(\.\d+)+[A-Za-z0-9.+~-]*$/;
/** An image reference as `docker images` lists it (repository:tag). */
const IMAGE = /^[a-z0-9][a-z0-9._/:-]*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
/** A GPU's name as `nvidia-smi -L` prints it ("NVIDIA GB10"). */
const GPU = /^[A-Za-z0-9][A-Za-z0-9 ._()/+-]{0,99}$/;

/**
 * What a node printed that is not what it must be (a path, an address, a name, a version): one
 * problem each, the value shown as JSON (its control characters escaped). A node whose account
 * prints a home with a line break would otherwise write what it likes into the stack file.
 */
export function factProblems(f: NodeFacts): Msg[] {
  const out: Msg[] = [];
  const bad = (what: string, value: string, must: MessageKey) =>
    out.push(msg("init.badFact", { node: f.name, what, value: JSON.stringify(value), must: msg(must) }));
  const path = (s: string) => s.startsWith("/") && NODE_PATH.test(s);
  // Each value by what printed it, in the node's own words ($HOME, `docker images`, ...).
  if (!path(f.home)) bad("$HOME", f.home, "init.mustPath");
  if (!path(f.hfHome)) bad("$HF_HOME", f.hfHome, "init.mustPath");
  if (f.nic !== undefined && !IPV4.test(f.nic.addr)) bad("ip -4 addr", f.nic.addr, "init.mustAddress");
  if (f.nic !== undefined && !FABRIC_NAME.test(f.nic.dev)) bad("ip -4 addr", f.nic.dev, "init.mustName");
  if (f.docker !== undefined && !VERSION.test(f.docker)) bad("docker version", f.docker, "init.mustVersion");
  for (const i of f.images) if (!IMAGE.test(i)) bad("docker images", i, "init.mustImage");
  for (const g of f.gpus) if (!GPU.test(g)) bad("nvidia-smi -L", g, "init.mustName");
  return out;
}

/** A key with the comment lines above it. */
function keyed(key: string, ...comment: string[]): Scalar {
  const k = new Scalar(key);
  if (comment.length > 0) k.commentBefore = comment.map((c) => ` ${c}`).join("\n");
  return k;
}

/** A map in flow style: `{ host: spark1, port: 22, user: ops }`. */
function flow(doc: Document, value: Record<string, unknown> | unknown[]): YAMLMap | YAMLSeq {
  const n = doc.createNode(value);
  n.flow = true;
  return n;
}

/** One node's block, each fact with the comment that says where it came from. */
function nodeMap(doc: Document, f: NodeFacts, images: Record<string, string>): YAMLMap {
  const m = new YAMLMap();
  const add = (key: Scalar, value: unknown) => m.items.push(new Pair(key, value));
  const via = f.address === f.host ? "" : ` (${f.host} is ${f.address} in ~/.ssh/config)`;
  add(
    keyed("ssh", `${f.user}@${f.host}:${f.port}${via}, its home ${f.home} (found by sm121 init)`),
    flow(doc, { host: f.host, port: f.port, user: f.user }),
  );
  if (f.nic?.via === "rdma") {
    const said =
      `the ConnectX-7 interface ${f.nic.dev}, ${f.nic.addr}: the first RDMA device's interface with an IPv4 ` +
      "address; the engines bind and meet there";
    add(keyed("ip", said), f.nic.addr);
    add(
      keyed("fabric", "its RoCE ports and GID index: found by the plan-time look (docs/fabric.md)"),
      flow(doc, { interface: f.nic.dev, rdma: "auto" }),
    );
  } else if (f.nic !== undefined) {
    const said =
      `${f.nic.addr} on ${f.nic.dev}: the address this SSH connection reached, as no RDMA interface has an ` +
      "IPv4 address; the engines bind and meet there";
    add(keyed("ip", said), f.nic.addr);
  } else {
    add(keyed("ip", "no address found for the engines: write the node's address on the cluster network"), f.address);
  }
  const gpuSaid =
    f.gpus.length > 0
      ? `${f.gpus.length} x ${[...new Set(f.gpus)].join(", ")} (nvidia-smi -L)`
      : "none found (nvidia-smi -L failed or listed none); a DGX Spark has one GB10";
  const rdmaHint =
    f.nic !== undefined && f.nic.via !== "rdma"
      ? [
          "with RoCE links between the nodes, name them: " +
            "fabric: { interface: <its ConnectX-7 interface>, rdma: auto } (docs/fabric.md)",
        ]
      : [];
  add(keyed("gpus", ...rdmaHint, `GPU: ${gpuSaid}`), Math.max(1, f.gpus.length));
  const mem =
    f.memTotalGiB === undefined
      ? "memory: free -b failed"
      : `memory: ${f.memTotalGiB} GiB (free -b), ${f.memAvailableGiB ?? "?"} GiB available now`;
  const hf = f.hfExists ? "exists" : "does not exist yet; the first up that downloads a model into it makes it";
  add(keyed("env", mem, `the HF cache ${f.hfHome}: ${hf}`), flow(doc, { HF_HOME: f.hfHome }));
  const held = f.images.length === 0 ? "no images" : `images: ${f.images.join(", ")}`;
  const docker =
    f.docker === undefined
      ? "docker: not found (docker version failed); install Docker with the NVIDIA container toolkit"
      : `docker ${f.docker}, ${held}`;
  const missing = Object.entries(images)
    .filter(([, image]) => !f.images.includes(image))
    .map(([recipe, image]) => `${recipe} runs ${image}, which is not here yet: docker pull ${image} on ${f.name}`);
  m.comment = [docker, ...missing].map((c) => ` ${c}`).join("\n");
  return m;
}

/**
 * The stack file's text, written with the YAML library (never by string): the nodes as found,
 * the solo deployment, the pair commented out, no gateway unless asked. `salt`: the
 * `encryptionsalt` `pulumi stack init` wrote, kept first.
 */
export function stackYaml(o: StackInput): string {
  const doc = new Document({});
  const [first, second] = o.facts;
  const gate = gateOf(o.facts);
  const gateSaid =
    gate.from === undefined
      ? "the default"
      : `half of the least MemAvailable sm121 init found (${gate.from.name}: ${gate.from.memAvailableGiB} GiB), ` +
        "at most 100";
  const engines = Object.entries(o.images).map(([r, i]) => {
    const v = imageVersion(i);
    return `${r}: ${i}${v === undefined ? "" : ` (${v.engine} ${v.version}, ${v.source})`}`;
  });
  const config = new YAMLMap();
  const add = (key: Scalar, value: unknown) => config.items.push(new Pair(key, value));
  add(
    keyed(
      "sm121:knownHosts",
      "the host keys sm121 init showed and you confirmed; every connection is checked against them",
    ),
    o.knownHosts,
  );
  add(
    keyed("sm121:minMemAvailableGiB", `the memory an up waits for before it starts an engine: ${gateSaid}`),
    gate.gib,
  );
  const nodes = new YAMLMap();
  for (const f of o.facts) nodes.items.push(new Pair(new Scalar(f.name), nodeMap(doc, f, o.images)));
  add(new Scalar("sm121:nodes"), nodes);
  const deployments = new YAMLSeq();
  if (first !== undefined) {
    const solo = flow(doc, { recipe: SOLO_RECIPE, nodes: [first.name] });
    solo.commentBefore = ` ${engines.join("; ")}`;
    deployments.items.push(solo);
  }
  deployments.comment =
    second === undefined
      ? ` ${PAIR_RECIPE} needs two nodes (tp 2, one GB10 each): add a second node to serve it`
      : " Qwen3-32B across two nodes (tp 2): serve it instead of the one above (a node serves one deployment)\n" +
        ` - { recipe: ${PAIR_RECIPE}, nodes: [${first?.name ?? ""}, ${second.name}] }`;
  add(new Scalar("sm121:deployments"), deployments);
  if (o.gateway) {
    add(
      keyed("sm121:gateway", "the gateway file, on this machine (sm121, litellm or llama-swap format)"),
      flow(doc, { path: "~/.local/state/sm121/gateway-backends.json", format: "litellm" }),
    );
  } else {
    config.comment = " no gateway file: add sm121:gateway (path, format) when a gateway should route to the engines";
  }
  const top = new YAMLMap();
  if (o.salt !== undefined) top.items.push(new Pair(new Scalar("encryptionsalt"), o.salt));
  top.items.push(new Pair(new Scalar("config"), config));
  doc.contents = top;
  doc.commentBefore = [
    ` Written by sm121 init for ${o.facts.map((f) => f.name).join(", ")}. ` +
      "Each fact about a node says where it came from.",
    " Secrets never go here: pulumi config set --secret sm121:sshPrivateKey < key (or run ssh-agent),",
    " sm121:hfToken, sm121:apiKey.",
  ].join("\n");
  return doc.toString({ lineWidth: 0 });
}

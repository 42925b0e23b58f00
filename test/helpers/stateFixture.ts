/**
 * State fixtures (test/fixtures/state/<release>.json): a stack exported from the simulated site
 * after an earlier release's `pulumi up`, kept readable and free of secrets and machine paths.
 *
 * - The export is taken with `--show-secrets`, so every secret is a plaintext envelope; the SSH
 *   private key in it becomes `@SSH_PRIVATE_KEY@` (the site makes a new one every run).
 * - The project directory the release ran in (which 9492e6f's provider text names) becomes
 *   `@CHECKOUT@`; an import puts the project directory there, so that delete and read of the old
 *   state run this checkout's code, as they would after a `git pull`.
 * - Packed bundles (`__bundle`, gzip+base64) are stored unpacked as `{ "@packed": ... }`, so a
 *   reviewer reads the old release's bundle; they are packed again byte for byte on load.
 * - The secrets provider's state (the recording stack's salt) is left out: an import takes the
 *   target stack's own.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pack, unpack } from "../../src/providers/packed";
import { REPO } from "./project";

export interface StateResource {
  urn: string;
  type: string;
  provider?: string;
  inputs?: Record<string, unknown>;
  outputs?: Record<string, unknown>;
}

export interface Exported {
  version: number;
  deployment: { manifest?: unknown; secrets_providers?: unknown; resources: StateResource[] };
}

/** Pulumi's marker of a secret value in a deployment (apitype.SecretSig). */
export const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A copy of `v` with `f` applied to every value, deepest first. */
function mapDeep(v: unknown, f: (v: unknown, key: string) => unknown, key = ""): unknown {
  if (Array.isArray(v))
    return f(
      v.map((x) => mapDeep(x, f, key)),
      key,
    );
  if (isObject(v)) return f(Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mapDeep(x, f, k)])), key);
  return f(v, key);
}

/** Replaces every occurrence of each `from` in every string of the deployment, secrets included. */
function replaceStrings(v: unknown, pairs: ReadonlyArray<readonly [string, string]>): unknown {
  return mapDeep(v, (x) => (typeof x === "string" ? pairs.reduce((s, [from, to]) => s.replaceAll(from, to), x) : x));
}

/** Every secret envelope's plaintext, parsed, changed by `f`, and written back. */
function mapSecrets(v: unknown, f: (plain: unknown) => unknown): unknown {
  return mapDeep(v, (x) => {
    if (!isObject(x) || x[SECRET_SIG] !== SECRET_VALUE || typeof x["plaintext"] !== "string") return x;
    return { ...x, plaintext: JSON.stringify(f(JSON.parse(x["plaintext"]) as unknown)) };
  });
}

export interface RecordContext {
  /** The project directory the release ran in, as its provider text names it. */
  buildDir: string;
  privateKey: string;
}

/** An export as a fixture: secrets scrubbed, the build's path normalized, bundles unpacked. */
export function toFixture(e: Exported, ctx: RecordContext): Exported {
  const key = ctx.privateKey.trimEnd();
  const scrubbed = mapSecrets(e, (plain) => replaceStrings(plain, [[key, "@SSH_PRIVATE_KEY@"]]));
  const moved = replaceStrings(scrubbed, [[ctx.buildDir, "@CHECKOUT@"]]);
  const unpacked = mapDeep(moved, (x, key) =>
    key === "__bundle" && typeof x === "string" ? { "@packed": unpack(x) } : x,
  );
  const out = unpacked as Exported;
  const { secrets_providers: _s, ...deployment } = out.deployment;
  // Any line of the key's body left anywhere (a secret this scrub does not know) fails the recording.
  const body = key.split("\n").filter((l) => !l.startsWith("-----"));
  const text = JSON.stringify(out);
  if (body.some((l) => text.includes(l))) throw new Error("the SSH private key is still in the fixture");
  return { ...out, deployment };
}

/** The fixture as Pulumi stored it: bundles packed again, placeholders given. */
export function fromFixture(f: Exported, values: { checkout: string; privateKey: string }): Exported {
  const packed = mapDeep(f, (x) => (isObject(x) && "@packed" in x ? pack(x["@packed"]) : x));
  const placed = replaceStrings(packed, [["@CHECKOUT@", values.checkout]]);
  const key = values.privateKey.trimEnd();
  return mapSecrets(placed, (plain) => replaceStrings(plain, [["@SSH_PRIVATE_KEY@", key]])) as Exported;
}

/** The releases whose stacks are recorded, oldest first. */
export const RECORDED_RELEASES = ["9492e6f", "057f8f4"] as const;

export const fixturePath = (release: string): string => join(REPO, "test", "fixtures", "state", `${release}.json`);

export function readFixture(release: string): Exported {
  return JSON.parse(readFileSync(fixturePath(release), "utf8")) as Exported;
}

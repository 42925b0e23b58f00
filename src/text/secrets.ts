/**
 * The one rule of what looks secret, for values sm121 does not hold itself (a key a profile sets,
 * a line someone added to a node's `.env`, a backend URL's query): the diff, the state and the
 * output say such a value "changed", never the value. sm121's own secrets (sm121:hfToken,
 * sm121:apiKey, ...) are masked by their values wherever they are known; this rule is for the rest.
 *
 * A name looks secret when one of its words (split at `_`, `-`, `.` and a lower-to-upper case
 * change) is or ends in TOKEN, KEY, SECRET, PASSWORD, PASSWD, PASSPHRASE, CREDENTIAL(S), or is
 * PASS, PWD, CREDS, COOKIE or begins with AUTH: `WANDB_API_KEY`, `hfToken`, `DB_PASS`,
 * `AUTHORIZATION` do, `MAX_NUM_BATCHED_TOKENS` and `KV_CACHE_DTYPE` do not. A value looks like a
 * token when it has a known token prefix (`hf_`, `sk-`, `ghp_`, ...), is a JWT, 32 or more hex
 * digits, a long run of mixed-case letters and digits, or a URL with a password in it.
 */

const ENDINGS = ["TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS"];
const WORDS = ["PASS", "PWD", "CREDS", "COOKIE"];

/** The words of a name: `WANDB_API_KEY` -> WANDB, API, KEY; `hfToken` -> HF, TOKEN. */
function wordsOf(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .split(/[_.\-\s]+/)
    .filter((w) => w !== "")
    .map((w) => w.toUpperCase());
}

/** A name (an env key, a query parameter, a config key) that says its value is a credential. */
export function secretName(name: string): boolean {
  return wordsOf(name).some(
    (w) => WORDS.includes(w) || w.startsWith("AUTH") || ENDINGS.some((e) => w === e || w.endsWith(e)),
  );
}

/** Prefixes of the tokens of well-known services (Hugging Face, OpenAI, GitHub, GitLab, Slack, AWS, ...). */
const PREFIXES = ["hf_", "sk-", "sk_", "rk_", "pk_live_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];
const MORE_PREFIXES = [
  "glpat-",
  "xox[abposr]-",
  "AKIA",
  "ASIA",
  "AIza",
  "ya29\\.",
  "npm_",
  "pypi-",
  "dop_v1_",
  "whsec_",
];
const TOKEN_PREFIX = new RegExp(`^(${[...PREFIXES, ...MORE_PREFIXES].join("|")})[A-Za-z0-9_\\-.]{8,}`);

/** A value that looks like a token, whatever its name. */
export function secretValue(value: string): boolean {
  const v = value.trim();
  if (TOKEN_PREFIX.test(v)) return true;
  if (/^eyJ[\w-]+\.[\w-]+\.[\w-]*$/.test(v)) return true;
  if (/^[0-9a-fA-F]{32,}$/.test(v)) return true;
  if (hasPassword(v)) return true;
  // base64 or base64url of random bytes: a long run of letters and digits of both cases.
  if (/^[A-Za-z0-9+/_=-]{24,}$/.test(v)) {
    const runs = v.split(/[+/_=-]/);
    const mixed = (r: string) => /[a-z]/.test(r) && /[A-Z]/.test(r) && /[0-9]/.test(r);
    if (runs.some((r) => r.length >= 16 && mixed(r))) return true;
  }
  return false;
}

/** A key and value pair that must be said as "changed", never shown. */
export function looksSecret(name: string, value?: string): boolean {
  return secretName(name) || (value !== undefined && secretValue(value));
}

function hasPassword(v: string): boolean {
  try {
    const u = new URL(v);
    return u.password !== "" || [...u.searchParams.keys()].some(secretName);
  } catch {
    return false;
  }
}

/**
 * A URL without the credentials it may carry: no user or password, no query parameter whose name
 * looks secret (`?password=`, `?token=`, `?sslpassword=`), no fragment. The rest stays as
 * written, so that it still names the same place (a backend's identity, a URL an operator reads).
 * Text that is no URL comes back unchanged.
 */
export function withoutCredentials(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url;
  }
  const secretQuery = [...u.searchParams.keys()].some(secretName);
  if (u.username === "" && u.password === "" && !secretQuery && u.hash === "") return url;
  u.username = "";
  u.password = "";
  u.hash = "";
  for (const k of [...u.searchParams.keys()]) if (secretName(k)) u.searchParams.delete(k);
  return u.toString();
}

/**
 * Key names with a fixed meaning in a recipe .env (seed 001).
 *
 * The node keys belong to the site, because they differ per node (the HF cache, the bind address,
 * the port). The forbidden keys never come from a profile: the secrets live only in the node .env
 * (or a Pulumi secret), and TP1_CONTAINER_NAME would rename the container that sm121 stops and
 * checks by the recipe's container name. The node keys are the site's (recipe/types NODE_ENV_KEYS).
 */
import { NODE_ENV_KEYS, type NodeEnvKey } from "../recipe/types";

export const FORBIDDEN_KEYS = ["HF_TOKEN", "API_KEY", "TP1_CONTAINER_NAME"] as const;
export const SECRET_KEYS = ["HF_TOKEN", "API_KEY"] as const;
export type SecretKey = (typeof SECRET_KEYS)[number];

/** The Pulumi config key of each secret sm121 passes to the nodes. */
export const SECRET_CONFIG = {
  HF_TOKEN: "sm121:hfToken",
  API_KEY: "sm121:apiKey",
} as const satisfies Record<SecretKey, string>;

/** The keys whose quoted value may span lines in a profile. */
export const MULTILINE_KEYS = ["EXTRA_DOCKER_ARGS", "EXTRA_VLLM_ARGS"] as const;

export function isNodeKey(key: string): key is NodeEnvKey {
  return (NODE_ENV_KEYS as readonly string[]).includes(key);
}

export function isSecretKey(key: string): key is SecretKey {
  return (SECRET_KEYS as readonly string[]).includes(key);
}

export function isForbiddenKey(key: string): boolean {
  return (FORBIDDEN_KEYS as readonly string[]).includes(key);
}

export function isMultilineKey(key: string): boolean {
  return (MULTILINE_KEYS as readonly string[]).includes(key);
}

export const KEY_PATTERN = /^[A-Z_][A-Z0-9_]*$/;
/** Names of profiles, nodes and recipes: they go into header lines and file names. */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * What vLLM and SGLang drivers share: both are Python servers launched once per node, with the
 * served name and tensor-parallel size as flags, and a multi-node rendezvous at rank 0's address
 * on the rendezvous port. Only the flags' names differ; each driver says its own.
 */
import { rendezvousPort, type EngineFlagsCtx } from "./driver";
import type { Recipe } from "../recipe/types";

/** `--served-model-name` (when set) and the engine's tensor-parallel flag with `tp`. */
export function servedAndTp(recipe: Recipe, tpFlag: string): string[] {
  const served = recipe.servedModelName === undefined ? [] : ["--served-model-name", recipe.servedModelName];
  return [...served, tpFlag, String(recipe.tp)];
}

/**
 * `--nnodes N --node-rank R` and the engine's flags naming the rendezvous (`head`, `port`) on a
 * deployment of several nodes; nothing on one node.
 */
export function rendezvousArgs(ctx: EngineFlagsCtx, at: (head: string, port: number) => string[]): string[] {
  if (ctx.nnodes <= 1) return [];
  return [
    "--nnodes",
    String(ctx.nnodes),
    "--node-rank",
    String(ctx.rank),
    ...at(ctx.peers[0] ?? ctx.bindHost, rendezvousPort(ctx.port)),
  ];
}

import { msg, type Msg } from "../text/messages";
import type { EngineDriver, EngineFlagsCtx } from "./driver";
import type { ArgProblem } from "./options/check";

/**
 * The engine process's argument vector for one rank, entrypoint first: model, parallel flags,
 * host/port where the driver takes them, rendezvous flags, the key file, the metrics exporter's
 * flags, then the recipe's args.
 */
export function engineArgv(driver: EngineDriver, ctx: EngineFlagsCtx): string[] {
  const entrypoint = ctx.recipe.entrypoint ?? driver.entrypointDefault();
  const hostPort =
    driver.takesHostPort && (ctx.rank === 0 || driver.hostPortOnAllNodes)
      ? ["--host", ctx.bindHost, "--port", String(ctx.port)]
      : [];
  return [
    ...entrypoint,
    ...driver.modelArgs(ctx.recipe, entrypoint),
    ...driver.parallelArgs(ctx.recipe, ctx),
    ...hostPort,
    ...driver.distributedArgs(ctx),
    ...(ctx.keyFile === undefined ? [] : driver.apiKeyArgs(ctx.keyFile)),
    ...(driver.metrics?.flags ?? []),
    ...ctx.recipe.args,
  ];
}

/** Flags that sm121 derives from the recipe's fields and the site, by their usual spelling. */
const OWNED_AS_WRITTEN: Readonly<Record<string, Msg>> = {
  "--host": msg("spec.why.host"),
  "--port": msg("spec.why.port"),
  "--tensor-parallel-size": msg("spec.why.tp"),
  "-tp": msg("spec.why.tp"),
  "--tp": msg("spec.why.tp"),
  "--tp-size": msg("spec.why.tp"),
  "--served-model-name": msg("spec.why.served"),
  "--model": msg("spec.why.model"),
  "--model-path": msg("spec.why.model"),
  "--nnodes": msg("spec.why.nodes"),
  "--node-rank": msg("spec.why.nodes"),
  "--master-addr": msg("spec.why.rank0"),
  "--master-port": msg("spec.why.masterPort"),
  "--dist-init-addr": msg("spec.why.rank0"),
  "--headless": msg("spec.why.headless"),
  "--peers": msg("spec.why.nodes"),
  "--api-key": msg("spec.why.apiKey"),
};

/**
 * The args check of an engine without an extracted option table (gr8, DGPP): the flags sm121
 * derives, as written or as `--flag=value`.
 */
export function ownedFlagsAsWritten(args: readonly string[]): Iterable<ArgProblem> {
  return args.flatMap((a, index) => {
    const flag = a.split("=")[0] ?? "";
    const why = Object.hasOwn(OWNED_AS_WRITTEN, flag) ? OWNED_AS_WRITTEN[flag] : undefined;
    if (why === undefined) return [];
    return [{ index, problem: msg("spec.args.owned", { flag }), fix: msg("spec.args.ownedFix", { why }) }];
  });
}

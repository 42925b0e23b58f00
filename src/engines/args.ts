import type { EngineDriver, EngineFlagsCtx } from "./driver";

/**
 * The engine process's argument vector for one rank, entrypoint first: model, parallel flags,
 * host/port where the driver takes them, rendezvous flags, then the recipe's own args.
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
    ...ctx.recipe.args,
  ];
}

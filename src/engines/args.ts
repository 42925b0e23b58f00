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
const OWNED_AS_WRITTEN: Readonly<Record<string, string>> = {
  "--host": "sm121 sets it from the node's BIND/ip",
  "--port": "set `port` instead",
  "--tensor-parallel-size": "set `tp` instead",
  "-tp": "set `tp` instead",
  "--tp": "set `tp` instead",
  "--tp-size": "set `tp` instead",
  "--served-model-name": "set `served_model_name` instead",
  "--model": "set `model` instead",
  "--model-path": "set `model` instead",
  "--nnodes": "sm121 derives it from the deployment's nodes",
  "--node-rank": "sm121 derives it from the deployment's nodes",
  "--master-addr": "sm121 derives it from rank 0's ip",
  "--master-port": "sm121 derives it from `port`",
  "--dist-init-addr": "sm121 derives it from rank 0's ip",
  "--headless": "sm121 adds it on vLLM ranks above 0",
  "--peers": "sm121 derives it from the deployment's nodes",
  "--api-key": "put API_KEY in the node .env or a Pulumi secret; a flag would show it in argv",
};

/**
 * The args check of an engine without an extracted option table (gr8, DGPP): the flags sm121
 * derives, as written or as `--flag=value`.
 */
export function ownedFlagsAsWritten(args: readonly string[]): Iterable<ArgProblem> {
  return args.flatMap((a, index) => {
    const flag = a.split("=")[0] ?? "";
    const why = Object.hasOwn(OWNED_AS_WRITTEN, flag) ? OWNED_AS_WRITTEN[flag] : undefined;
    return why === undefined ? [] : [{ index, problem: `${flag} is set by sm121`, fix: `remove it (${why})` }];
  });
}

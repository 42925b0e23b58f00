/**
 * The operator's Ctrl-C, for the scripts this process runs on nodes: once `cancelAll` is called,
 * every running step is stopped as a timed-out one is (its channel signalled and closed) and fails
 * with "interrupted (Ctrl-C)", and a step started after it fails at once. The process that runs
 * the operations says when (providers/cancel: Pulumi's Cancel call to the provider host).
 */
const controller = new AbortController();

export const cancelled: AbortSignal = controller.signal;

export function cancelAll(): void {
  controller.abort();
}

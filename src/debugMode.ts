/**
 * Imported by the program before anything registers. Unless SM121_DEBUG=1, the program drops two
 * things that the Pulumi SDK and its run harness do for debugging alone, and that every preview
 * and up pays:
 * - the SDK's own debug lines: it sends each to the engine as a Log RPC, one after the other,
 *   about four per resource ("Registering resource", "RPC prepared", "RPC finished"), whatever
 *   the CLI's verbosity; the engine shows them only under `pulumi up --debug`;
 * - source-mapped stack traces: the run harness installs source-map-support, which maps every
 *   frame of every stack trace through the source maps of the SDK's and sm121's files (parsing
 *   each map on first use), and the SDK takes a trace for each of its promises (for its leak
 *   report) and a whole stack for each resource (its source position). Without it Node formats
 *   the traces itself: an error's frames then name dist/*.js, not src/*.ts.
 * A run that fails (a plan-time refusal) pays most: the SDK then formats the trace of every
 * promise it still holds, each mapped. What each costs is measured in bench/README.md and in the
 * closing note of the stop that tried without. sm121's own messages (log.info, log.warn) are no
 * debug lines and reach the plan either way.
 */
import * as log from "@pulumi/pulumi/log";

if (process.env["SM121_DEBUG"] !== "1") {
  const sdk: { debug: typeof log.debug } = log;
  sdk.debug = () => Promise.resolve();
  Reflect.deleteProperty(Error, "prepareStackTrace");
}

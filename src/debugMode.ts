/**
 * Every change of the SDK's behaviour the program makes, behind one switch (SM121_DEBUG=1 turns each
 * off), with tests in recipe-component.test.ts. Imported by the program before anything registers.
 * Unless SM121_DEBUG=1, the program drops two
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

const DEBUG = process.env["SM121_DEBUG"] === "1";

if (!DEBUG) {
  const sdk: { debug: typeof log.debug } = log;
  sdk.debug = () => Promise.resolve();
  Reflect.deleteProperty(Error, "prepareStackTrace");
}

/**
 * Runs `register` with one frame per stack trace, until the engine has answered every
 * registration it made (its `registered`; a failed run ends with the limit still low). The SDK
 * gives every output property four promises, and every registration and log call a few more, and
 * captures and formats a stack trace for each at once (for its promise-leak report alone): some
 * 40 traces a resource, more CPU than the resources' own work (measured in bench/README.md). The
 * leak report still names each promise and its property. With SM121_DEBUG=1 the stacks stay whole.
 */
export function withShortStacks<T>(register: () => { value: T; registered: Promise<unknown> }): T {
  if (DEBUG) return register().value;
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 1;
  let registered: Promise<unknown> = Promise.resolve();
  try {
    const r = register();
    registered = r.registered;
    return r.value;
  } finally {
    const back = () => {
      Error.stackTraceLimit = limit;
    };
    void registered.then(back, back);
  }
}

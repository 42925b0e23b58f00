/**
 * Imported by the program before anything registers: the SDK's own debug lines stay in the
 * program unless the operator asks for them with SM121_SDK_DEBUG=1.
 *
 * The SDK sends every debug line to the engine as a Log RPC, one after the other, whatever the
 * CLI's verbosity: some four per resource ("Registering resource", "RPC prepared", "RPC
 * finished"), each with its promise and stack trace. The engine shows them only under
 * `pulumi up --debug`. On a site of 40 deployments they were 330 RPCs and about half a second of
 * a no-change up. sm121's own messages (log.info, log.warn) are not debug lines and still reach
 * the plan.
 */
import * as log from "@pulumi/pulumi/log";

const sdk: { debug: typeof log.debug } = log;
if (process.env["SM121_SDK_DEBUG"] !== "1") sdk.debug = () => Promise.resolve();

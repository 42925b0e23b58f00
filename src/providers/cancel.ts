/**
 * The first Ctrl-C of a `pulumi up`, heard by the provider host. The Pulumi CLI answers it by
 * sending its Cancel call to every provider and then waiting for the operations in flight; the
 * Node.js dynamic provider host answers that call and does nothing else, so a readiness wait
 * would run to its timeout. The call still reaches this process as an HTTP/2 stream on the host's
 * gRPC server, and Node.js reports each stream a server starts on its public diagnostics channel
 * (`http2.server.stream.start`): seen there, it ends every step this process runs on the nodes
 * (remote/cancel), and each operation fails, recorded as failed, as for any other failure. Nothing
 * of the SDK or of Node.js is changed; test/e2e/readiness-key.test.ts fails if the call stops
 * arriving this way.
 */
import { subscribe } from "node:diagnostics_channel";
import { cancelAll } from "../remote/cancel";

/** The gRPC method of Pulumi's provider protocol (pulumirpc.ResourceProvider/Cancel). */
const CANCEL_PATH = "/pulumirpc.ResourceProvider/Cancel";

subscribe("http2.server.stream.start", (message) => {
  const headers = (message as { headers?: Record<string, unknown> } | null)?.headers;
  if (headers?.[":path"] === CANCEL_PATH) cancelAll();
});

/**
 * The entry of the sm121 Pulumi program. It registers the dynamic provider host before anything
 * else (./providers/host) and lets that registration reach the engine before it loads the program
 * (./program: sm121's modules, the site, the look at the nodes): the engine starts the host, a
 * second or more of Node.js and the SDK, while the program does its own work, instead of after it.
 */
import "./compileCache";
import "./providers/host";

export = async (): Promise<Record<string, unknown>> => {
  // Module loading and reading the site are synchronous: the registration's RPC goes out first.
  await new Promise((resolve) => setImmediate(resolve));
  const { main } = await import("./program");
  return main();
};

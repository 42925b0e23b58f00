/**
 * Runs the compiled sm121 program (dist/src/index.js) under Pulumi's mocks
 * (`pulumi.runtime.setMocks`) in a plain node process, and prints one JSON line: every resource
 * the program registered (type, name, parent, dependsOn, options, inputs with secrets marked),
 * the outputs each component registered, which @pulumi/command modules were loaded, and the error a
 * failing program ended with (its message and its stack). Run it from a
 * test with the project directory in PULUMI_NODEJS_ROOT_DIRECTORY, the stack as argv[2] and the
 * configuration in PULUMI_CONFIG, as the language host passes them. (@pulumi/pulumi under
 * vitest's module loader hangs; a child node process runs it as the language host does.)
 */
const { join, resolve } = require("path");
const pulumi = require("@pulumi/pulumi");
const settings = require("@pulumi/pulumi/runtime/settings");
const rpc = require("@pulumi/pulumi/runtime/rpc");

const repo = resolve(__dirname, "..", "..");
const stack = process.argv[2];

/** A property value as JSON: a secret becomes {secret: value}, a resource reference its URN. */
function plain(v) {
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === "object") {
    if (v[rpc.specialSigKey] === rpc.specialSecretSig) return { secret: plain(v.value) };
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  }
  return v;
}

async function main() {
  await pulumi.runtime.setMocks(
    {
      newResource: (args) => ({ id: `${args.name}-id`, state: args.inputs }),
      call: () => ({}),
    },
    "sm121",
    stack,
    false,
  );
  const registered = [];
  const monitor = settings.getMonitor();
  const register = monitor.registerResource.bind(monitor);
  monitor.registerResource = (req, callback) => {
    const nameOf = (urn) => urn.split("::").pop();
    registered.push({
      type: req.getType(),
      name: req.getName(),
      parent: req.getParent() === "" ? undefined : nameOf(req.getParent()),
      // A provider reference is `<provider urn>::<id>`: the name is the part before the id.
      provider: req.getProvider() === "" ? undefined : req.getProvider().split("::").slice(-2)[0],
      dependsOn: req.getDependenciesList().map(nameOf).sort(),
      deleteBeforeReplace: req.getDeletebeforereplace(),
      ignoreChanges: req.getIgnorechangesList(),
      inputs: plain(rpc.deserializeProperties(req.getObject())),
    });
    return register(req, callback);
  };
  // The outputs each component registered: the names of their properties.
  const outputs = {};
  const registerOutputs = monitor.registerResourceOutputs.bind(monitor);
  monitor.registerResourceOutputs = (req, callback) => {
    outputs[req.getUrn().split("::").pop()] = Object.keys(rpc.deserializeProperties(req.getOutputs())).sort();
    return registerOutputs(req, callback);
  };
  const program = require(join(repo, "dist", "src", "index.js"));
  // A program that fails after its registrations (a deployment the look could not see) still
  // registered them: the run prints them with the error.
  let error;
  let errorStack;
  try {
    const outputs = await program();
    // Every registration the program started, and the outputs it returned, are settled.
    await new Promise((done) => pulumi.output(outputs).apply(done));
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
    // What the run harness formats for its trace span (cmd/run/error.ts defaultErrorMessage).
    errorStack = e instanceof Error ? e.stack : undefined;
  }
  await settings.waitForRPCs();
  const loaded = Object.keys(require.cache).filter((f) => f.includes(`${join("node_modules", "@pulumi", "command")}`));
  // On its own marked line: the program's log (pulumi.log under the mocks) shares stdout.
  const modules = loaded.map((f) => f.slice(f.indexOf("@pulumi")));
  const failed = { ...(error !== undefined && { error }), ...(errorStack !== undefined && { errorStack }) };
  const report = { registered, outputs, loaded: modules, ...failed };
  process.stdout.write(`@registered ${JSON.stringify(report)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});

#!/usr/bin/env node
"use strict";
// Stand-in for OpenMPI 4.1's mpirun in an image that carries nccl-tests (see ./mpiwire.js for why
// it is one): the options the link test and the public two-Spark recipes use (-np/-n, -H/--host
// with host:slots, --allow-run-as-root, --bind-to, --map-by, --mca/-mca, -x, --oversubscribe),
// anything else refused as mpirun refuses it. One rank a slot, in -H order; a rank on this host
// starts here, a rank on another host through the rsh agent (plm_rsh_agent, default ssh) exactly
// as OpenMPI starts its daemon there: `<agent> <host> orted -mca ess "env" -mca ess_base_jobid
// "<job>" -mca ess_base_vpid <n> -mca ess_base_num_procs "<n>" -mca orte_hnp_uri "<uri>"`; the
// daemon (./orted.js) starts the rank and relays its output and exit. Every rank's output comes
// out here; a rank that fails ends the job as mpirun does.
const net = require("node:net");
const os = require("node:os");
const { spawn } = require("node:child_process");
const { nodeIp } = require("../lib/node.js");
const { lines } = require("./mpiwire.js");

const FLAGS = new Set([
  "--allow-run-as-root",
  "--oversubscribe",
  "-oversubscribe",
  "--tag-output",
  "--report-bindings",
]);
const VALUED = {
  "-np": "np",
  "-n": "np",
  "--np": "np",
  "-c": "np",
  "-H": "host",
  "--host": "host",
  "-host": "host",
  "--bind-to": "bind",
  "-bind-to": "bind",
  "--map-by": "map",
  "-map-by": "map",
};

function die(text, code = 1) {
  process.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
  process.exit(code);
}
const box = (body) => `${"-".repeat(74)}\n${body}\n${"-".repeat(74)}\n`;

const argv = process.argv.slice(2);
const o = { flags: new Set(), mca: {}, x: [] };
let i = 0;
for (; i < argv.length && argv[i].startsWith("-"); i++) {
  const a = argv[i];
  if (FLAGS.has(a)) o.flags.add(a.replace(/^-+/, ""));
  else if (a === "--mca" || a === "-mca") {
    o.mca[argv[i + 1]] = argv[i + 2];
    i += 2;
  } else if (a === "-x") o.x.push(argv[++i]);
  else if (VALUED[a] !== undefined) o[VALUED[a]] = argv[++i];
  else die(`mpirun: Error: unknown option "${a}"\nType 'mpirun --help' for usage.`);
}
const app = argv.slice(i);
if (app.length === 0) die(box("No executable was specified on the mpirun command line.\n\nAborting."));
if (process.getuid?.() === 0 && !o.flags.has("allow-run-as-root") && process.env.OMPI_ALLOW_RUN_AS_ROOT !== "1")
  die(
    box(
      "mpirun has detected an attempt to run as root.\n\n" +
        "Running as root is *strongly* discouraged as any mistake (e.g., in defining TMPDIR) or bug " +
        "can result in catastrophic damage to the OS\n" +
        "file system, leaving your system in an unusable state.\n\n" +
        "We strongly suggest that you run mpirun as a non-root user.\n\n" +
        "You can override this protection by adding the --allow-run-as-root option\n" +
        "to the cmd line or by setting two environment variables in the following way:\n" +
        "the variable OMPI_ALLOW_RUN_AS_ROOT=1 to indicate the desire to override this\n" +
        "protection, and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 to confirm the choice and\n" +
        "add one more layer of certainty that you want to do so.\n" +
        "We reiterate our advice against doing so - please proceed at your own risk.",
    ),
  );

const hosts = (o.host ?? "localhost").split(",").map((h) => {
  const [name, slots] = h.split(":");
  return { name, slots: Number(slots ?? "1") };
});
const slots = hosts.flatMap((h) => Array.from({ length: h.slots }, () => h.name));
const np = Number(o.np ?? slots.length);
if (np > slots.length)
  die(
    box(
      `There are not enough slots available in the system to satisfy the ${np}\nslots that were requested by ` +
        `the application:\n\n  ${app[0]}\n\nEither request fewer slots for your application, ` +
        "or make more slots\navailable for use.",
    ),
  );

const me = nodeIp();
const local = (h) => h === "localhost" || h === "127.0.0.1" || h === me || h === os.hostname();
const forwarded = Object.fromEntries(
  o.x.map((x) => (x.includes("=") ? x.split(/=(.*)/s).slice(0, 2) : [x, process.env[x] ?? ""])),
);
const agentText = o.mca.plm_rsh_agent ?? process.env.OMPI_MCA_plm_rsh_agent ?? "ssh : rsh";
const agent = agentText.split(":")[0].trim().split(/\s+/);
const job = 1000 + Math.floor(Math.random() * 60000);
const exits = new Map();
const procs = [];
const started = new Set();
let uri;

function rankEnv(rank) {
  return {
    ...forwarded,
    OMPI_COMM_WORLD_RANK: String(rank),
    OMPI_COMM_WORLD_SIZE: String(np),
    OMPI_COMM_WORLD_LOCAL_RANK: "0",
    OMPI_COMM_WORLD_LOCAL_SIZE: "1",
    OMPI_MCA_orte_hnp_uri: uri,
  };
}

function exited(rank, code) {
  exits.set(rank, code);
  if (code !== 0 && [...exits.values()].filter((c) => c !== 0).length === 1) {
    process.stderr.write(
      box(
        "Primary job  terminated normally, but 1 process returned\na non-zero exit code. Per " +
          "user-direction, the job has been aborted.",
      ),
    );
    process.stderr.write(
      box(
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n" +
          "the job to be terminated. The first process to do so was:\n\n" +
          `  Process name: [[${job},1],${rank}]\n  Exit code:    ${code}`,
      ),
    );
    for (const p of procs) p.kill("SIGTERM");
    finish(code);
    return;
  }
  if (exits.size === np) finish(0);
}

/** Ends once the output is out (an exit() would cut a pipe's last writes). */
function finish(code) {
  process.exitCode = code;
  server.close();
  for (const c of conns) c.sock.destroy();
}

// Gets and gathers wait until their value is there.
const store = new Map();
const waiting = [];
const gathers = new Map();
function settle() {
  for (const w of waiting.splice(0)) {
    if (store.has(w.key)) w.conn.send({ kind: "value", key: w.key, value: store.get(w.key) });
    else waiting.push(w);
  }
}

const conns = [];
const server = net.createServer((s) => {
  const c = lines(s);
  conns.push(c);
  c.on((m) => {
    if (m.kind === "hello") {
      // One slot a host: a daemon's vpid is the rank it starts.
      started.add(m.vpid);
      c.send({ kind: "launch", argv: app, rank: m.vpid, env: rankEnv(m.vpid) });
    } else if (m.kind === "out") process.stdout.write(m.text);
    else if (m.kind === "err") process.stderr.write(m.text);
    else if (m.kind === "exit") exited(m.rank, m.code);
    else if (m.kind === "put") {
      store.set(m.key, m.value);
      settle();
    } else if (m.kind === "get") {
      waiting.push({ key: m.key, conn: c });
      settle();
    } else if (m.kind === "gather") {
      const g = gathers.get(m.key) ?? { values: [], root: undefined };
      g.values[m.rank] = m.value;
      if (m.rank === 0) g.root = c;
      gathers.set(m.key, g);
      if (g.root !== undefined && g.values.filter((v) => v !== undefined).length === np)
        g.root.send({ kind: "gathered", key: m.key, value: g.values });
    }
  });
});

server.listen(0, "0.0.0.0", () => {
  uri = `${job * 65536}.0;tcp://${me || "127.0.0.1"}:${server.address().port}`;
  slots.slice(0, np).forEach((host, rank) => {
    if (local(host)) {
      const env = { ...process.env, ...rankEnv(rank) };
      const p = spawn(app[0], app.slice(1), { env, stdio: ["ignore", "inherit", "inherit"] });
      p.on("error", (e) =>
        die(
          box(
            "mpirun was unable to launch the specified application as it could not access\n" +
              `or execute an executable:\n\nExecutable: ${app[0]}\nNode: ${os.hostname()}\n\n` +
              `while attempting to start process rank ${rank}.\n(${e.message})`,
          ),
        ),
      );
      p.on("exit", (code) => exited(rank, code ?? 1));
      procs.push(p);
      return;
    }
    const q = (v) => `"${v}"`;
    const orted = [
      "orted",
      "-mca",
      "ess",
      q("env"),
      "-mca",
      "ess_base_jobid",
      q(job * 65536),
      "-mca",
      "ess_base_vpid",
      String(rank),
      "-mca",
      "ess_base_num_procs",
      q(np),
      "-mca",
      "orte_hnp_uri",
      q(uri),
    ];
    const p = spawn(agent[0], [...agent.slice(1), host, ...orted], { stdio: ["ignore", "inherit", "inherit"] });
    p.on("error", (e) => die(`mpirun: could not run the rsh agent ${agent[0]}: ${e.message}`));
    p.on("exit", (code) => {
      if (started.has(rank)) return;
      process.stderr.write(
        box(
          "ORTE was unable to reliably start one or more daemons.\n" +
            "This usually is caused by:\n\n" +
            "* not finding the required libraries and/or binaries on\n" +
            "  one or more nodes. Please check your PATH and " +
            "LD_LIBRARY_PATH\n  settings, or configure OMPI with --enable-orterun-prefix-by-default\n\n" +
            "* lack of authority " +
            "to execute on one or more specified nodes.\n  Please verify your allocation and authorities.\n\n* the " +
            "inability to write startup files into /tmp (--tmpdir/orte_tmpdir_base).\n" +
            "  Please check with your sys admin " +
            `to determine the correct location to use.\n\n(the agent for ${host} exited ${code})`,
        ),
      );
      for (const x of procs) x.kill("SIGTERM");
      process.exit(1);
    });
    procs.push(p);
  });
});

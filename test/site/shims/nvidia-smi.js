#!/usr/bin/env node
"use strict";
// The test site's nvidia-smi: one NVIDIA GB10 (unified memory, so memory columns
// read "Not Supported"/[N/A] as on a DGX Spark), and as compute apps the fake
// engine processes of THIS node: started on it, or in a container of its Docker
// Engine (lib/proc onNode). On the node it is on PATH; in a container run with
// --gpus the NVIDIA hook stand-in links it in, as the real hook mounts the
// driver's nvidia-smi. In a container it sees the container's processes only.
const path = require("node:path");
const { allPids, cmdlineOf, alive, onNode } = require("./lib/proc");
const { nodeRoot } = require("./lib/node");

const GPU = {
  name: "NVIDIA GB10",
  index: "0",
  uuid: "GPU-5b1a7c4e-0d2f-4c7b-9e41-6a0f3d2b8c11",
  driver_version: "580.95.05",
  compute_cap: "12.1",
  "pci.bus_id": "0000000F:01:00.0",
  "memory.total": "[N/A]",
  "memory.used": "[N/A]",
  "memory.free": "[N/A]",
  "utilization.gpu": "0 %",
  "temperature.gpu": "42",
  "power.draw": "11.52 W",
  count: "1",
  persistence_mode: "Enabled",
};

function fail(msg, code) {
  process.stderr.write(`${msg}\n`);
  process.exitCode = code;
}

function engineApps(root) {
  const apps = [];
  for (const pid of allPids()) {
    if (pid === process.pid || !alive(pid)) continue;
    const argv = cmdlineOf(pid);
    const i = argv.findIndex((a) => path.basename(a) === "fake-engine.js");
    if (i < 0 || !onNode(pid, root)) continue;
    const mode = argv[i + 1] || "";
    const names = {
      vllm: "VLLM::EngineCore",
      sglang: "sglang::scheduler",
      gr8: "gr8-engine",
      dgpp: "dgpp-manager",
      "dgpp-worker": "dgpp-worker",
    };
    const u = argv.indexOf("--gpu-memory-utilization");
    const m = argv.indexOf("--mem-fraction-static");
    const frac = u > 0 ? Number(argv[u + 1]) : m > 0 ? Number(argv[m + 1]) : 0.9;
    apps.push({ pid: String(pid), process_name: names[mode] || "python3", used_memory: Math.round(frac * 122570) });
  }
  return apps.sort((a, b) => Number(a.pid) - Number(b.pid));
}

function query(kind, fieldsArg, format) {
  if (format === undefined) return fail("Missing --format argument.\n\nPlease run 'nvidia-smi -h' for help.", 2);
  const opts = format.split(",");
  if (opts[0] !== "csv" || opts.slice(1).some((o) => o !== "noheader" && o !== "nounits"))
    return fail(`Invalid format: ${format}`, 2);
  const noheader = opts.includes("noheader");
  const nounits = opts.includes("nounits");
  const fields = fieldsArg.split(",");
  const appFields = {
    pid: "pid",
    process_name: "process_name",
    used_memory: "used_gpu_memory [MiB]",
    used_gpu_memory: "used_gpu_memory [MiB]",
    gpu_uuid: "gpu_uuid",
    gpu_name: "gpu_name",
  };
  const known = kind === "apps" ? appFields : Object.fromEntries(Object.keys(GPU).map((k) => [k, k]));
  for (const f of fields) if (!(f in known)) return fail(`Field "${f}" is not a valid field to query.`, 2);
  const rows = [];
  if (!noheader) rows.push(fields.map((f) => (nounits ? known[f].replace(/ \[.*\]$/, "") : known[f])).join(", "));
  const items = kind === "apps" ? engineApps(nodeRoot() || "") : [GPU];
  for (const it of items) {
    rows.push(
      fields
        .map((f) => {
          if (f === "used_memory" || f === "used_gpu_memory")
            return nounits ? String(it.used_memory) : `${it.used_memory} MiB`;
          if (f === "gpu_uuid") return GPU.uuid;
          if (f === "gpu_name") return GPU.name;
          const v = it[f];
          return nounits ? String(v).replace(/ (%|W)$/, "") : String(v);
        })
        .join(", "),
    );
  }
  if (rows.length) process.stdout.write(`${rows.join("\n")}\n`);
}

function table() {
  const apps = engineApps(nodeRoot() || "");
  const line = "+-----------------------------------------------------------------------------------------+";
  const out = [
    new Date().toString().slice(0, 24),
    line,
    "| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |",
    "+-----------------------------------------+------------------------+----------------------+",
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
    "|                                         |                        |               MIG M. |",
    "|=========================================+========================+======================|",
    "|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |",
    "| N/A   42C    P0             11W /  N/A  | Not Supported          |      0%      Default |",
    "|                                         |                        |                  N/A |",
    "+-----------------------------------------+------------------------+----------------------+",
    "",
    line,
    "| Processes:                                                                              |",
    "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
    "|        ID   ID                                                               Usage      |",
    "|=========================================================================================|",
  ];
  if (apps.length === 0)
    out.push("|  No running processes found                                                             |");
  for (const a of apps) {
    out.push(
      `|    0   N/A  N/A    ${a.pid.padStart(12)}      C  ` +
        ` ${a.process_name.padEnd(34)}${`${a.used_memory}MiB`.padStart(11)} |`,
    );
  }
  out.push(line);
  process.stdout.write(`${out.join("\n")}\n`);
}

function main(argv) {
  let q = null;
  let format;
  for (const a of argv) {
    const m = /^--(query-compute-apps|query-gpu|format)=(.*)$/.exec(a);
    if (a === "-L" || a === "--list-gpus") {
      process.stdout.write(`GPU 0: ${GPU.name} (UUID: ${GPU.uuid})\n`);
      return;
    } else if (m && m[1] === "format") format = m[2];
    else if (m) q = { kind: m[1] === "query-gpu" ? "gpu" : "apps", fields: m[2] };
    else return fail(`Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.`, 2);
  }
  if (q) return query(q.kind, q.fields, format);
  if (format !== undefined)
    return fail(`Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.`, 2);
  table();
}

main(process.argv.slice(2));

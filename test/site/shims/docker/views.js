"use strict";
// What `docker ps` and `docker inspect` show for a container.
const store = require("./store");
const { asMap } = require("./template");

function goTime(iso) {
  const d = new Date(iso);
  return `${d.toISOString().slice(0, 19).replace("T", " ")} +0000 UTC`;
}

function quoteCommand(c, noTrunc) {
  const cmd = [c.config.Path, ...c.config.Args].join(" ");
  const short = !noTrunc && cmd.length > 20 ? `${cmd.slice(0, 19)}…` : cmd;
  return JSON.stringify(short);
}

function psRow(c, noTrunc) {
  const labels = c.config.Config.Labels || {};
  const row = {
    Command: quoteCommand(c, noTrunc),
    CreatedAt: goTime(c.config.Created),
    ID: noTrunc ? c.config.Id : c.config.Id.slice(0, 12),
    Image: c.config.Config.Image,
    Labels: Object.keys(labels).sort().map((k) => `${k}=${labels[k]}`).join(","),
    LocalVolumes: "0",
    Mounts: c.config.Mounts.map((m) => m.Source).join(","),
    Names: c.config.Name.slice(1),
    Networks: c.config.HostConfig.NetworkMode === "default" ? "bridge" : c.config.HostConfig.NetworkMode,
    Ports: "",
    RunningFor: `${store.humanDuration(Date.now() - Date.parse(c.config.Created))} ago`,
    Size: "0B",
    State: c.state.Status,
    Status: store.statusText(c),
  };
  Object.defineProperty(row, "Label", { value: (k) => (k in labels ? labels[k] : ""), enumerable: false });
  return row;
}

const HEADERS = {
  ID: "CONTAINER ID", Image: "IMAGE", Command: "COMMAND", CreatedAt: "CREATED AT", RunningFor: "CREATED",
  Ports: "PORTS", Status: "STATUS", Size: "SIZE", Names: "NAMES", Labels: "LABELS", Mounts: "MOUNTS",
  Networks: "NETWORKS", State: "STATE", LocalVolumes: "LOCAL VOLUMES",
};

function headerRow() {
  const row = { ...HEADERS };
  Object.defineProperty(row, "Label", { value: () => "LABEL", enumerable: false });
  return row;
}

/** text/tabwriter with minwidth 10, padding 3, as the docker CLI configures it. */
function tabulate(lines) {
  const rows = lines.map((l) => l.split("\t"));
  const widths = [];
  for (const r of rows) r.forEach((cell, i) => (widths[i] = Math.max(widths[i] || 0, cell.length)));
  return rows
    .map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(Math.max(10, widths[i] + 3)))).join(""))
    .join("\n");
}

function inspectView(c) {
  const s = c.state;
  const zero = "0001-01-01T00:00:00Z";
  return {
    Id: c.config.Id,
    Created: c.config.Created,
    Path: c.config.Path,
    Args: c.config.Args,
    State: {
      Status: s.Status,
      Running: s.Status === "running",
      Paused: false,
      Restarting: false,
      OOMKilled: false,
      Dead: false,
      Pid: s.Status === "running" ? s.Pid : 0,
      ExitCode: s.ExitCode || 0,
      Error: s.Error || "",
      StartedAt: s.StartedAt || zero,
      FinishedAt: s.FinishedAt || zero,
    },
    Image: c.config.Image,
    LogPath: c.config.Sim.log,
    Name: c.config.Name,
    RestartCount: 0,
    Driver: "overlay2",
    Platform: "linux",
    HostConfig: c.config.HostConfig,
    Mounts: c.config.Mounts,
    Config: { ...c.config.Config, Labels: asMap({ ...(c.config.Config.Labels || {}) }) },
    NetworkSettings: { Networks: asMap({ [c.config.HostConfig.NetworkMode === "host" ? "host" : "bridge"]: {} }) },
  };
}

module.exports = { psRow, headerRow, tabulate, inspectView };

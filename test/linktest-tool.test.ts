/**
 * Which program the link test runs (fabric/linkmpi.serve.ts chooseTool): nccl-tests' all_reduce_perf
 * only where the image's look finds it, mpirun and ssh; otherwise the torch script, with the reason
 * the report prints. The look's output is fed in as a node would print it.
 */
import { describe, expect, it } from "vitest";
import type { Host, RunOptions, RunResult } from "../src/remote";
import type { LinkTestMpi } from "../src/render/types";
import { chooseTool, type LinkTool } from "../src/fabric/linkmpi.serve";
import { say } from "../src/text/messages";
import type { NodeRecord } from "../src/protocol";

/** The tool with its reason as the English report says it. */
const inEnglish = (t: LinkTool) => ({ ...t, why: say(t.why, "en") });

const mpi: LinkTestMpi = { probe: "probe", start: [], run: "", stop: [], receiver: "", agentDir: "/x" };

/** A node that answers the look with these records (and exit code). */
function node(records: NodeRecord[], code = 0, stderr = ""): Host {
  return {
    node: "s1",
    run: (_s: string, _o: RunOptions): Promise<RunResult> => Promise.resolve({ code, stdout: "", stderr, records }),
    lock: () => {
      throw new Error("not used");
    },
    steps: () => {
      throw new Error("not used");
    },
    close: () => undefined,
  };
}

const found = (arp: string, mpirun: string, ssh: string): NodeRecord[] => [
  { kind: "linkTool", tool: "all_reduce_perf", path: arp },
  { kind: "linkTool", tool: "mpirun", path: mpirun },
  { kind: "linkTool", tool: "ssh", path: ssh },
];

describe("the link test's tool", () => {
  it("is all_reduce_perf where the image has it, mpirun and ssh", async () => {
    const bin = "/opt/nccl-tests/build/all_reduce_perf";
    const t = await chooseTool("docker", mpi, node(found(bin, "/usr/bin/mpirun", "/usr/bin/ssh")));
    expect(inEnglish(t)).toEqual({
      kind: "all_reduce_perf",
      path: "/opt/nccl-tests/build/all_reduce_perf",
      why: "the image has nccl-tests' /opt/nccl-tests/build/all_reduce_perf, mpirun and ssh",
    });
  });

  it("is the torch script otherwise, saying what is missing", async () => {
    const b = "/b/all_reduce_perf";
    const noImage = "docker: Error response from daemon: No such image: x";
    const cases: Array<[Host, string]> = [
      [node(found("", "/usr/bin/mpirun", "/usr/bin/ssh")), "the image has no nccl-tests all_reduce_perf"],
      [node(found(b, "", "/usr/bin/ssh")), `the image has ${b} but no mpirun to start its ranks on the other nodes`],
      [node(found(b, "/usr/bin/mpirun", "")), `the image has ${b} and mpirun but no ssh for mpirun's agent`],
      [node([], 125, noImage), `the image did not run its shell on s1 (${noImage})`],
    ];
    for (const [h, why] of cases) expect(inEnglish(await chooseTool("docker", mpi, h))).toEqual({ kind: "torch", why });
    const tmux = await chooseTool("tmux", undefined, node([]));
    expect(inEnglish(tmux)).toEqual({ kind: "torch", why: "a tmux deployment has no image to look in" });
  });
});

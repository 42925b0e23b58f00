/**
 * An operator's stack file names real hosts, addresses and paths: git ignores every stack file at
 * the project's top (the README says so), except the shipped example; the test sites stay tracked.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { REPO } from "./helpers/project";

function ignored(path: string): boolean {
  try {
    execFileSync("git", ["check-ignore", "--no-index", "-q", path], { cwd: REPO });
    return true;
  } catch {
    return false;
  }
}

describe(".gitignore and the operator's site", () => {
  it("ignores an operator's own stack file at the top", () => {
    expect(ignored("Pulumi.mysite.yaml")).toBe(true);
    expect(ignored("Pulumi.spark-lab.yaml")).toBe(true);
  });

  it("keeps the example, the project file and the test sites tracked", () => {
    expect(ignored("Pulumi.spark-site.yaml")).toBe(false);
    expect(ignored("Pulumi.yaml")).toBe(false);
    expect(ignored("test/hostile/corpus/project/Pulumi.hostile.yaml")).toBe(false);
  });
});

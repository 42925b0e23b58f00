/**
 * Proof that the toolchain is real: the Pulumi CLI built from the module proxy, its Node.js
 * language host and the dynamic provider host run a small dynamic resource through preview, up,
 * refresh and destroy on a file:// backend, offline.
 */
import { readFileSync, rmSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { pulumiEnv, writeFiles, type PulumiEnv } from "./helpers/pulumi";
import { testDir } from "./helpers/tmp";

const repo = resolve(__dirname, "..");

const PROGRAM = `
const pulumi = require("@pulumi/pulumi");
const fs = require("fs");
// A dynamic resource that keeps a file: create writes it, update rewrites it, read reports
// whether it is still there, delete removes it.
const provider = {
  async create(inputs) {
    fs.writeFileSync(inputs.path, inputs.text);
    return { id: inputs.path, outs: { ...inputs, writes: 1 } };
  },
  async diff(id, olds, news) {
    const changes = olds.text !== news.text || olds.present === false;
    return { changes, replaces: olds.path !== news.path ? ["path"] : [] };
  },
  async update(id, olds, news) {
    fs.writeFileSync(news.path, news.text);
    return { outs: { ...news, writes: olds.writes + 1 } };
  },
  async read(id, props) { return { id, props: { ...props, present: fs.existsSync(props.path) } }; },
  async delete(id, props) { fs.rmSync(props.path, { force: true }); },
};
class Note extends pulumi.dynamic.Resource {
  constructor(name, args, opts) {
    super(provider, name, { writes: undefined, present: undefined, ...args }, opts, "proof", "Note");
  }
}
const cfg = new pulumi.Config();
const note = new Note("note", { path: cfg.require("path"), text: cfg.require("text") });
exports.writes = note.writes;
`;

describe.sequential("the Pulumi toolchain", () => {
  let p: PulumiEnv;
  let file: string;

  beforeAll(async () => {
    const dir = testDir("sm121-proof-");
    writeFiles(dir, {
      "Pulumi.yaml": "name: proof\nruntime:\n  name: nodejs\n  options:\n    typescript: false\nmain: index.js\n",
      "index.js": PROGRAM,
      "package.json": '{"name":"proof","private":true}\n',
    });
    symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"));
    p = pulumiEnv(dir);
    file = join(dir, "note.txt");
    expect((await p.run(["stack", "init", "dev"])).code).toBe(0);
    expect((await p.run(["config", "set", "path", file])).code).toBe(0);
    expect((await p.run(["config", "set", "text", "one"])).code).toBe(0);
  });

  it("is the CLI version the toolchain pins", async () => {
    const v = await p.run(["version"]);
    expect(v.stdout.trim()).toBe("v3.274.1");
  });

  // One life of one resource, a step per test: each step starts where the one before ended. No
  // step has a time limit of its own beyond the suite's: a loaded machine only makes it slower.
  it("previews a create without touching anything", async () => {
    const preview = await p.run(["preview"]);
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(/\+ 2 to create/);
    expect(() => readFileSync(file)).toThrow();
  });

  it("creates it, and a second up changes nothing", async () => {
    const up = await p.run(["up", "--yes"]);
    expect(up.code, up.all).toBe(0);
    expect(readFileSync(file, "utf8")).toBe("one");
    const again = await p.run(["up", "--yes"]);
    expect(again.all).toMatch(/2 unchanged/);
  });

  it("finds drift with refresh (the file removed by hand) and repairs it with up", async () => {
    rmSync(file);
    const refresh = await p.run(["refresh", "--yes"]);
    expect(refresh.code, refresh.all).toBe(0);
    expect(refresh.all).toMatch(/~ 1 updated|1 updated/);
    const repair = await p.run(["up", "--yes"]);
    expect(repair.code, repair.all).toBe(0);
    expect(readFileSync(file, "utf8")).toBe("one");
  });

  it("updates it in place when an input changes", async () => {
    expect((await p.run(["config", "set", "text", "two"])).code).toBe(0);
    const upd = await p.run(["up", "--yes"]);
    expect(upd.all).toMatch(/1 updated/);
    expect(readFileSync(file, "utf8")).toBe("two");
    const out = await p.run(["stack", "output", "writes"]);
    expect(out.stdout.trim()).toBe("3");
  });

  it("destroys it", async () => {
    const destroy = await p.run(["destroy", "--yes"]);
    expect(destroy.code, destroy.all).toBe(0);
    expect(() => readFileSync(file)).toThrow();
  });
});

/**
 * The language of the compiled CLI, spawned as an operator runs it: `sm121 validate --lang ru` on
 * broken recipes prints each problem and its fix in Russian with file:line:col and the field path;
 * --lang wins over SM121_LANG, which wins over the locale (LC_ALL, LC_MESSAGES, LANG); an unknown
 * --lang is a usage error that lists the languages; the usage itself is translated.
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(__dirname, "..");
let project = "";

/** The compiled CLI with exactly these language variables (the test runner's own are dropped). */
function sm121(
  args: string[],
  lang: Record<string, string> = {},
): { code: number | null; stdout: string; stderr: string } {
  const env: NodeJS.ProcessEnv = { ...process.env, SM121_PROJECT: project };
  for (const k of ["SM121_STACK", "PULUMI_STACK", "SM121_LANG", "LC_ALL", "LC_MESSAGES", "LANG"]) delete env[k];
  const r = spawnSync(process.execPath, [join(ROOT, "bin", "sm121"), ...args], {
    cwd: ROOT,
    env: { ...env, ...lang },
    encoding: "utf8",
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(() => {
  if (!existsSync(join(ROOT, "dist", "src", "cli", "main.js")))
    throw new Error("dist/ is missing: run `npm run build` (npm test does)");
  project = mkdtempSync(join(tmpdir(), "sm121-lang-"));
  cpSync(join(ROOT, "recipes"), join(project, "recipes"), { recursive: true });
  cpSync(join(ROOT, "Pulumi.spark-site.yaml"), join(project, "Pulumi.spark-site.yaml"));
  const image = 'image = "nvcr.io/nvidia/vllm:26.01-py3"';
  writeFileSync(
    join(project, "recipes", "broken.toml"),
    `engine = "vllm"\nmodel = "Qwen/Qwen3-8B"\n${image}\nport = 80\nprot = 8000\n` +
      'mounts = ["/data/../models:/models"]\n',
  );
  writeFileSync(
    join(project, "recipes", "flags.toml"),
    `engine = "vllm"\nmodel = "Qwen/Qwen3-8B"\n${image}\nport = 8000\nargs = ["--max-model-length", "4096"]\n`,
  );
});

afterAll(() => rmSync(project, { recursive: true, force: true }));

const RU = [
  "recipes/broken.toml:4:1: port: должен быть не меньше 1024; выберите непривилегированный порт, например 8000",
  'recipes/broken.toml:6:11: mounts[0]: содержит сегмент ".."; укажите пути без ..',
  "recipes/broken.toml:5:1: prot: неизвестный ключ; может быть, имелось в виду port?",
  "recipes/flags.toml:5:9: args[0]: --max-model-length не является опцией vllm serve 0.11.1; " +
    "может быть, имелось в виду --max-model-len?",
  "4 ошибки",
  "",
].join("\n");

describe("sm121 validate --lang ru on broken recipes", () => {
  it("prints every problem and its fix in Russian, with file:line:col and the field path", () => {
    expect(sm121(["validate", "--stack", "spark-site", "--lang", "ru"])).toEqual({ code: 1, stdout: "", stderr: RU });
  });

  it("takes the language from SM121_LANG, else LC_ALL, LC_MESSAGES, LANG", () => {
    expect(sm121(["validate", "--stack", "spark-site"], { SM121_LANG: "ru" }).stderr).toBe(RU);
    expect(sm121(["validate", "--stack", "spark-site"], { LANG: "ru_RU.UTF-8" }).stderr).toBe(RU);
    expect(
      sm121(["validate", "--stack", "spark-site"], { LC_MESSAGES: "ru_RU.UTF-8", LANG: "de_DE.UTF-8" }).stderr,
    ).toBe(RU);
    // LC_ALL=C is English whatever LANG says, as POSIX has it.
    expect(sm121(["validate", "--stack", "spark-site"], { LC_ALL: "C", LANG: "ru_RU.UTF-8" }).stderr).toMatch(
      /^recipes\/broken\.toml:4:1: port: must be 1024 or above; pick an unprivileged port such as 8000\n/,
    );
  });

  it("lets --lang win over SM121_LANG and the locale", () => {
    const de = sm121(["validate", "--stack", "spark-site", "--lang=de"], { SM121_LANG: "ru", LANG: "ja_JP.UTF-8" });
    expect(de.stderr.split("\n")[0]).toBe(
      "recipes/broken.toml:4:1: port: muss 1024 oder größer sein; " +
        "wählen Sie einen nicht privilegierten Port wie 8000",
    );
    expect(de.stderr).toMatch(/\n4 Fehler\n$/);
    expect(sm121(["validate", "--stack", "spark-site", "--lang", "ru"], { SM121_LANG: "de" }).stderr).toBe(RU);
  });

  it("refuses an unknown --lang as a usage error that lists the languages", () => {
    const r = sm121(["validate", "--lang", "pt"], { SM121_LANG: "ru" });
    expect(r.code).toBe(2);
    // Said in the language of the environment, since the one asked for is not there.
    expect(r.stderr).toBe(
      "sm121 validate: --lang pt: sm121 не знает такого языка; используйте один из: en, ru, zh, ja, de, es\n",
    );
    expect(sm121(["--help", "--lang", "xx"]).stderr).toBe(
      "sm121: --lang xx: not a language of sm121; use one of en, ru, zh, ja, de, es\n",
    );
  });

  it("prints the usage and a verb's help in the language", () => {
    const ja = sm121(["--help", "--lang", "ja"]);
    expect(ja.code).toBe(0);
    expect(ja.stdout).toMatch(/^使い方: sm121 <command> \[options\]\n\nコマンド:\n {2}init /);
    expect(ja.stdout).toContain("\n共通オプション:\n  --stack S ");
    const es = sm121(["validate", "--help"], { LANG: "es_ES.UTF-8" }).stdout;
    expect(es.split("\n").slice(0, 4)).toEqual([
      "uso: sm121 validate [options]",
      "  comprueba cada receta, cada perfil (desplegado o no) y el sitio; sale con 1 ante cualquier error",
      "",
      "opciones:",
    ]);
    expect(es).toContain("--lang L   el idioma de los mensajes: en, ru, zh, ja, de, es");
    const bad = sm121(["validate", "--jsn"], { SM121_LANG: "zh" });
    expect([bad.code, bad.stderr.split("\n")[0]]).toEqual([
      2,
      "sm121 validate: 未知选项 --jsn（已知：--stack, --lang, --help, --json）",
    ]);
  });
});

/**
 * The six locales of sm121's messages: every catalogue of every area has exactly the English keys
 * of its area with the same {placeholders}, a key belongs to one area, a catalogue with a key
 * missing does not compile, every key is used, and the locale comes from SM121_LANG, else LC_ALL /
 * LC_MESSAGES / LANG.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as ts from "typescript";
import { describe, expect, it } from "vitest";
import {
  AREAS,
  CATALOGUES,
  LOCALES,
  checkCatalogue,
  detectLocale,
  format,
  localeOf,
  msg,
  placeholders,
  say,
  translator,
  type AreaName,
  type Message,
} from "../src/text/messages";

/** Every text of a message: the one string, or each plural form. */
function texts(m: Message): string[] {
  return typeof m === "string" ? [m] : Object.values(m).filter((x): x is string => x !== undefined);
}
const en: Record<string, Message> = CATALOGUES.en;
const keys = Object.keys(en).sort();
const areaNames = Object.keys(AREAS) as AreaName[];

/** The placeholders of a message: of its one text, or of each plural form (all the same). */
function placeholdersOf(m: Message): string[] {
  const each = texts(m).map((x) => JSON.stringify(placeholders(x)));
  return new Set(each).size === 1 ? placeholders(texts(m)[0] ?? "") : ["<plural forms differ>"];
}

const pluralKeys = keys.filter((k) => typeof en[k] !== "string");

describe("the catalogues", () => {
  it("gives each key to one area", () => {
    const all = areaNames.flatMap((a) => Object.keys(AREAS[a].en));
    expect(all.length).toBe(keys.length);
  });

  it.each(LOCALES.flatMap((l) => areaNames.map((a) => [a, l] as const)))(
    "%s/%s.json has exactly the English keys of its area",
    (area, locale) => {
      expect(Object.keys(AREAS[area][locale]).sort()).toEqual(Object.keys(AREAS[area].en).sort());
    },
  );

  it.each(LOCALES.map((l) => [l]))("%s has exactly the English keys, each with the same placeholders", (locale) => {
    const cat: Record<string, Message> = CATALOGUES[locale];
    expect(Object.keys(cat).sort()).toEqual(keys);
    const wrong = keys.filter(
      (k) => JSON.stringify(placeholdersOf(cat[k] ?? "")) !== JSON.stringify(placeholdersOf(en[k] ?? "")),
    );
    expect(wrong, `keys whose {placeholders} differ from English in ${locale}`).toEqual([]);
    expect(
      keys.filter((k) => texts(cat[k] ?? "").some((x) => x.trim() === "")),
      "empty messages",
    ).toEqual([]);
  });

  it.each(LOCALES.map((l) => [l]))(
    "%s gives every plural message exactly the plural categories of its language (Intl.PluralRules), each with {count}",
    (locale) => {
      const categories = [...new Intl.PluralRules(locale).resolvedOptions().pluralCategories].sort();
      const cat: Record<string, Message> = CATALOGUES[locale];
      for (const k of pluralKeys) {
        const m = cat[k];
        expect(typeof m, `${locale} ${k}`).toBe("object");
        expect(Object.keys(m ?? {}).sort(), `${locale} ${k}`).toEqual(categories);
        expect(placeholdersOf(m ?? ""), `${locale} ${k}`).toContain("count");
      }
    },
  );

  it("has plural messages, and Russian tells one, few and many apart", () => {
    expect(pluralKeys.length).toBeGreaterThan(3);
    const ru = translator("ru");
    expect([1, 2, 5, 11, 21, 22, 25].map((count) => ru("count.nodes", { count }))).toEqual([
      "1 узел",
      "2 узла",
      "5 узлов",
      "11 узлов",
      "21 узел",
      "22 узла",
      "25 узлов",
    ]);
    const en1 = translator("en");
    expect([0, 1, 2].map((count) => en1("doctor.nodeProblems", { node: "spark1", count }))).toEqual([
      "spark1: 0 problems",
      "spark1: 1 problem",
      "spark1: 2 problems",
    ]);
    expect(translator("ja")("count.nodes", { count: 1 })).toBe("ノード 1 台");
    expect(translator("es")("validate.errors", { count: 1 })).toBe("1 error");
    expect(translator("es")("validate.errors", { count: 1000000 })).toBe("1000000 errores");
  });

  it("the translations are translations: most messages differ from English", () => {
    for (const l of LOCALES.filter((x) => x !== "en")) {
      const cat: Record<string, Message> = CATALOGUES[l];
      const same = keys.filter((k) => JSON.stringify(cat[k]) === JSON.stringify(en[k]));
      expect(same.length, `${l}: ${same.join(", ")}`).toBeLessThan(keys.length / 4);
    }
  });

  it("finds a locale whose placeholders differ (the check above is not vacuous)", () => {
    expect(placeholders("{a} and {b}")).toEqual(["a", "b"]);
    expect(placeholders("{b} und {a}")).toEqual(["a", "b"]);
    expect(placeholders("{a} und {c}")).not.toEqual(placeholders("{a} and {b}"));
  });

  it("every key is used by the sources", () => {
    const dir = join(__dirname, "..", "src");
    const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    const src = files.map((f) => readFileSync(join(dir, f), "utf8")).join("\n");
    expect(keys.filter((k) => !src.includes(`"${k}"`))).toEqual([]);
  });

  it("a catalogue with a missing key does not compile", () => {
    const dir = mkdtempSync(join(tmpdir(), "sm121-i18n-"));
    try {
      const { "spec.unknownKey": _dropped, ...rest } = AREAS.spec.en;
      writeFileSync(join(dir, "xx.json"), JSON.stringify(rest));
      const messages = join(__dirname, "..", "src", "text", "messages").replace(/\\/g, "/");
      const file = join(dir, "xx.ts");
      // The check catalogues.ts makes of each area, on a JSON catalogue that lacks one key.
      const lines = [
        `import en from "${messages}/spec/en.json";`,
        'import xx from "./xx.json";',
        `import type { Message } from "${messages}/index";`,
      ];
      writeFileSync(
        file,
        `${lines.join("\n")}\nexport const c = { xx } satisfies Record<string, Record<keyof typeof en, Message>>;\n`,
      );
      const program = ts.createProgram([file], {
        strict: true,
        noEmit: true,
        module: ts.ModuleKind.CommonJS,
        target: ts.ScriptTarget.ES2022,
        types: [],
        resolveJsonModule: true,
        esModuleInterop: true,
        skipLibCheck: true,
      });
      const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
      expect(errors.join("\n")).toMatch(/spec\.unknownKey/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("every catalogue passes the one schema, which refuses a missing, unknown or empty key by file and key", () => {
    for (const a of areaNames) for (const l of LOCALES) expect(() => checkCatalogue(a, l)).not.toThrow();
    const { "smoke.answer": _dropped, ...rest } = AREAS.cli.de;
    expect(() => checkCatalogue("cli", "de", rest)).toThrow(/^src\/text\/messages\/cli\/de\.json: smoke\.answer: /);
    expect(() => checkCatalogue("cli", "de", { ...AREAS.cli.de, "smoke.answr": "x" })).toThrow(
      /^src\/text\/messages\/cli\/de\.json: \(top level\): .*smoke\.answr/,
    );
    expect(() => checkCatalogue("cli", "ru", { ...AREAS.cli.ru, "doctor.nodeOk": " " })).toThrow(
      "src/text/messages/cli/ru.json: doctor.nodeOk: is empty; write the message",
    );
    expect(() =>
      checkCatalogue("cli", "ru", { ...AREAS.cli.ru, "count.nodes": { one: "{count}", lots: "{count}" } }),
    ).toThrow(/ru\.json: count\.nodes/);
    // A key of another area is not a key of this one.
    expect(() => checkCatalogue("spec", "de", { ...AREAS.spec.de, "smoke.answer": "x" })).toThrow(
      /spec\/de\.json: \(top level\): .*smoke\.answer/,
    );
  });
});

describe("the locale", () => {
  it("reads the language of a locale name", () => {
    expect(localeOf("ru_RU.UTF-8")).toBe("ru");
    expect(localeOf("zh_CN.GB18030")).toBe("zh");
    expect(localeOf("ja_JP")).toBe("ja");
    expect(localeOf("de_DE@euro")).toBe("de");
    expect(localeOf("es")).toBe("es");
    expect(localeOf("C.UTF-8")).toBeUndefined();
    expect(localeOf("pt_BR.UTF-8")).toBeUndefined();
  });

  it("takes SM121_LANG first, then LC_ALL, LC_MESSAGES, LANG; English otherwise", () => {
    expect(detectLocale({ SM121_LANG: "de", LC_ALL: "ru_RU.UTF-8", LANG: "ja_JP.UTF-8" })).toBe("de");
    expect(detectLocale({ LC_ALL: "ru_RU.UTF-8", LANG: "ja_JP.UTF-8" })).toBe("ru");
    expect(detectLocale({ LC_MESSAGES: "es_ES.UTF-8", LANG: "ja_JP.UTF-8" })).toBe("es");
    expect(detectLocale({ LANG: "zh_CN.UTF-8" })).toBe("zh");
    expect(detectLocale({ SM121_LANG: "", LANG: "ja_JP.UTF-8" })).toBe("ja");
    expect(detectLocale({ LC_ALL: "C", LANG: "de_DE.UTF-8" })).toBe("en");
    expect(detectLocale({ LANG: "pt_BR.UTF-8" })).toBe("en");
    expect(detectLocale({})).toBe("en");
  });

  it("fills in the placeholders", () => {
    expect(format("{a} of {b}, {a}", { a: 1, b: "x" })).toBe("1 of x, 1");
    expect(format("{missing} stays", {})).toBe("{missing} stays");
    expect(translator("ru")("smoke.protected", { node: "spark1" })).toBe(
      "узел spark1 защищён (обслуживает рабочий трафик): smoke без --yes отказывается",
    );
    expect(translator("zh")("doctor.nodeOk", { node: "spark2" })).toBe("spark2：正常");
  });

  it("says a message with its message arguments in the same locale", () => {
    const m = msg("spec.gpus.listNodes", { nodes: msg("spec.count.nodes", { count: 2 }) });
    expect(say(m, "en")).toBe("list 2 nodes in the deployment");
    expect(say(m, "ru")).toBe("укажите в развёртывании 2 узла");
    expect(say(msg("spec.count.nodes", { count: 5 }), "ru")).toBe("5 узлов");
  });
});

/**
 * The CLI's messages in six locales, as data: `<locale>.json` beside this file. English is the
 * reference catalogue: its keys are the MessageKey type, and CATALOGUES is checked against
 * `Record<MessageKey, Message>`, so a catalogue that lacks a key fails to compile. At run time one
 * zod schema (exactly the English keys, each a non-empty text or its plural forms) validates the
 * catalogue a translator uses. Placeholders are `{name}`; test/i18n.test.ts checks that every
 * locale uses the same ones.
 *
 * The locale: $SM121_LANG, else the POSIX variables in their order of precedence ($LC_ALL,
 * $LC_MESSAGES, $LANG), e.g. `ru_RU.UTF-8`; English when none names a known language.
 */
import { z } from "zod";
import de from "./de.json";
import en from "./en.json";
import es from "./es.json";
import ja from "./ja.json";
import type { Message } from "./message";
import ru from "./ru.json";
import zh from "./zh.json";

export type { Message, PluralForms } from "./message";

export type MessageKey = keyof typeof en;

export const LOCALES = ["en", "ru", "zh", "ja", "de", "es"] as const;
export type Locale = (typeof LOCALES)[number];

export const CATALOGUES = { en, ru, zh, ja, de, es } satisfies Record<Locale, Record<MessageKey, Message>>;

/** The one schema of every catalogue: the English keys, no other, each a text or its plural forms. */
function catalogueSchema() {
  const text = z.string().refine((s) => s.trim() !== "", { error: "is empty; write the message" });
  const plural = z.strictObject({ zero: text.optional(), one: text.optional(), two: text.optional(), few: text.optional(), many: text.optional(), other: text });
  const message = z.union([text, plural]);
  return z.strictObject(Object.fromEntries(Object.keys(en).map((k) => [k, message])));
}

/** Throws, naming the file and the key, when a locale's catalogue is not a valid catalogue. */
export function checkCatalogue(locale: Locale, data: unknown = CATALOGUES[locale]): void {
  const r = catalogueSchema().safeParse(data);
  if (!r.success) {
    const where = (p: PropertyKey[]) => p.map(String).join(".") || "(top level)";
    throw new Error(r.error.issues.map((i) => `src/cli/i18n/${locale}.json: ${where(i.path)}: ${i.message}`).join("\n"));
  }
}

export type Params = Record<string, string | number>;

/** The language part of a locale name: `ru_RU.UTF-8` -> ru, `zh-Hans` -> zh, `C` -> undefined. */
export function localeOf(name: string | undefined): Locale | undefined {
  if (name === undefined) return undefined;
  const lang = name.trim().toLowerCase().split(/[_.@-]/)[0] ?? "";
  return (LOCALES as readonly string[]).includes(lang) ? (lang as Locale) : undefined;
}

export function detectLocale(env: NodeJS.ProcessEnv = process.env): Locale {
  for (const v of [env["SM121_LANG"], env["LC_ALL"], env["LC_MESSAGES"], env["LANG"]]) {
    if (v === undefined || v === "") continue;
    // The first variable that is set decides, as in POSIX: LC_ALL=C means English even with LANG=de.
    return localeOf(v) ?? "en";
  }
  return "en";
}

/** `{name}` placeholders of a message, sorted. */
export function placeholders(message: string): string[] {
  return [...message.matchAll(/\{([A-Za-z][A-Za-z0-9]*)\}/g)].map((m) => m[1] ?? "").sort();
}

export function format(message: string, params: Params = {}): string {
  return message.replace(/\{([A-Za-z][A-Za-z0-9]*)\}/g, (whole, name: string) => {
    const v = params[name];
    return v === undefined ? whole : String(v);
  });
}

export type Translate = (key: MessageKey, params?: Params) => string;

export function translator(locale: Locale): Translate {
  checkCatalogue(locale);
  const cat: Record<MessageKey, Message> = CATALOGUES[locale];
  const rules = new Intl.PluralRules(locale);
  return (key, params) => {
    const m = cat[key];
    const text = typeof m === "string" ? m : (m[rules.select(Number(params?.["count"] ?? 0))] ?? m.other);
    return format(text, params);
  };
}

let current: Translate | undefined;

/** --lang: the locale of this run, over the environment's. */
export function useLocale(locale: Locale): void {
  current = translator(locale);
}

/** The message `key` in the locale of this process. */
export function t(key: MessageKey, params?: Params): string {
  current ??= translator(detectLocale());
  return current(key, params);
}

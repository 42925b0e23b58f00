/**
 * The CLI's messages in six locales. English is the reference catalogue: its keys are the
 * MessageKey type, and every other catalogue is a `Record<MessageKey, Message>`, so a missing or
 * extra key fails to compile. Placeholders are `{name}`; test/i18n.test.ts checks that every
 * locale uses the same ones.
 *
 * The locale: $SM121_LANG, else the POSIX variables in their order of precedence ($LC_ALL,
 * $LC_MESSAGES, $LANG), e.g. `ru_RU.UTF-8`; English when none names a known language.
 */
import { de } from "./de";
import { en, type MessageKey } from "./en";
import { es } from "./es";
import { ja } from "./ja";
import type { Message } from "./message";
import { ru } from "./ru";
import { zh } from "./zh";

export type { MessageKey } from "./en";
export type { Message, PluralForms } from "./message";

export const LOCALES = ["en", "ru", "zh", "ja", "de", "es"] as const;
export type Locale = (typeof LOCALES)[number];

export const CATALOGUES = { en, ru, zh, ja, de, es } satisfies Record<Locale, Record<MessageKey, Message>>;

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

/**
 * sm121's messages in six locales. A message is a key of the catalogues (./catalogues) and its
 * arguments (`Msg`), so what sm121 finds carries no wording of its own: the words are chosen where
 * the message is printed, in the locale of the process that prints it. One zod schema (exactly
 * the English keys of the area, each a non-empty text or its plural forms) validates every
 * catalogue when sm121 is built (./check, run by `npm run build`), not at each run: the catalogues
 * are data compiled in beside the code. Placeholders are `{name}`; test/i18n.test.ts checks that
 * every locale uses the same ones.
 *
 * The locale: --lang (useLocale), else $SM121_LANG, else the POSIX variables in their order of
 * precedence ($LC_ALL, $LC_MESSAGES, $LANG), e.g. `ru_RU.UTF-8`; English when none names a known
 * language. The provider processes Pulumi starts inherit the environment, so they speak the same.
 */
import { AREAS, LOCALES, type AreaName, type Locale, type MessageKey } from "./catalogues";
import type { Message } from "./message";
import { visible } from "../visible";

export { AREAS, LOCALES, type AreaName, type Locale, type MessageKey } from "./catalogues";
export type { Message, PluralForms } from "./message";

/** Every key of every area, in one catalogue per locale (a locale's areas are read when it is first asked for). */
export const CATALOGUES = {} as Readonly<Record<Locale, Record<MessageKey, Message>>>;
for (const l of LOCALES) {
  let merged: Record<MessageKey, Message> | undefined;
  const get = () =>
    (merged ??= Object.assign({}, ...Object.values(AREAS).map((a) => a[l])) as Record<MessageKey, Message>);
  Object.defineProperty(CATALOGUES, l, { enumerable: true, get });
}

/** The one schema of every catalogue: the English keys of its area, no other, each a text or its plural forms. */
function catalogueSchema(area: AreaName) {
  // Loaded here: only the build's check (./check) and the tests validate a catalogue.
  const { z } = require("zod") as typeof import("zod");
  const text = z.string().refine((s) => s.trim() !== "", { error: "is empty; write the message" });
  const form = text.optional();
  const plural = z.strictObject({ zero: form, one: form, two: form, few: form, many: form, other: text });
  const message = z.union([text, plural]);
  return z.strictObject(Object.fromEntries(Object.keys(AREAS[area].en).map((k) => [k, message])));
}

/** Throws, naming the file and the key, when a catalogue is not a valid catalogue of its area. */
export function checkCatalogue(area: AreaName, locale: Locale, data: unknown = AREAS[area][locale]): void {
  const r = catalogueSchema(area).safeParse(data);
  if (!r.success) {
    const where = (p: PropertyKey[]) => p.map(String).join(".") || "(top level)";
    const file = `src/text/messages/${area}/${locale}.json`;
    throw new Error(r.error.issues.map((i) => `${file}: ${where(i.path)}: ${i.message}`).join("\n"));
  }
}

export type Params = Record<string, string | number>;

/** A message: its key and its arguments; an argument may be a message itself (a noun, a clause). */
export interface Msg {
  key: MessageKey;
  args?: MsgArgs;
}
export type MsgArgs = { [name: string]: string | number | Msg };

export function msg(key: MessageKey, args?: MsgArgs): Msg {
  return args === undefined ? { key } : { key, args };
}

/** How a list of messages is said: `a, b`, `a; b`, or one a line. */
const LIST_KEYS = { comma: "list.comma", semi: "list.semi", lines: "list.lines" } as const satisfies Record<
  string,
  MessageKey
>;

/** Messages in a row, one message (each item said in the reader's language, with its separator). */
export function listMsg(items: readonly Msg[], sep: keyof typeof LIST_KEYS = "comma"): Msg {
  const [first, ...more] = items;
  if (first === undefined) return msg("state.asFound", { text: "" });
  return more.reduce((before, next) => msg(LIST_KEYS[sep], { before, next }), first);
}

/** The same message: key and arguments equal, whatever order its arguments were stored in. */
export function sameMsg(a: Msg, b: Msg): boolean {
  if (a.key !== b.key) return false;
  const x = a.args ?? {};
  const y = b.args ?? {};
  const keys = Object.keys(x);
  if (keys.length !== Object.keys(y).length) return false;
  return keys.every((k) => {
    const [v, w] = [x[k], y[k]];
    return typeof v === "object" && typeof w === "object" ? sameMsg(v, w) : v === w;
  });
}

/** The language part of a locale name: `ru_RU.UTF-8` -> ru, `zh-Hans` -> zh, `C` -> undefined. */
export function localeOf(name: string | undefined): Locale | undefined {
  if (name === undefined) return undefined;
  const lang =
    name
      .trim()
      .toLowerCase()
      .split(/[_.@-]/)[0] ?? "";
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

/**
 * A message with its arguments filled in. A text argument is shown with its control characters
 * made visible (../visible): whatever a node or an engine said reaches the operator through the
 * arguments of a message, and none of it may steer the terminal.
 */
export function format(message: string, params: Params = {}): string {
  return message.replace(/\{([A-Za-z][A-Za-z0-9]*)\}/g, (whole, name: string) => {
    const v = params[name];
    return v === undefined ? whole : typeof v === "string" ? visible(v) : String(v);
  });
}

export type Translate = (key: MessageKey, params?: Params) => string;

export function translator(locale: Locale): Translate {
  const cat = CATALOGUES[locale];
  const rules = new Intl.PluralRules(locale);
  return (key, params) => {
    const m = cat[key];
    const text = typeof m === "string" ? m : (m[rules.select(Number(params?.["count"] ?? 0))] ?? m.other);
    return format(text, params);
  };
}

const made = new Map<Locale, Translate>();

function translatorOf(locale: Locale): Translate {
  let tr = made.get(locale);
  if (tr === undefined) made.set(locale, (tr = translator(locale)));
  return tr;
}

let current: { locale: Locale; t: Translate } | undefined;

/** --lang: the locale of this run, over the environment's. */
export function useLocale(locale: Locale): void {
  current = { locale, t: translatorOf(locale) };
}

function here(): { locale: Locale; t: Translate } {
  if (current === undefined) {
    const locale = detectLocale();
    current = { locale, t: translatorOf(locale) };
  }
  return current;
}

/** The locale of this process. */
export function currentLocale(): Locale {
  return here().locale;
}

/** The message `key` in the locale of this process. */
export function t(key: MessageKey, params?: Params): string {
  return here().t(key, params);
}

/** A message in the locale of this process (or in `locale`), its message arguments first. */
export function say(m: Msg, locale?: Locale): string {
  const tr = locale === undefined ? here().t : translatorOf(locale);
  const params: Params = {};
  for (const [k, v] of Object.entries(m.args ?? {})) params[k] = typeof v === "object" ? say(v, locale) : v;
  return tr(m.key, params);
}

/**
 * An error whose words are a message: `.message` is the message in the locale of the process that
 * throws it, and `said` is the message itself, for a catch site that stores it (and so can say it
 * again in another locale) or reads what it needs from its arguments, never from its wording.
 */
export class SaidError extends Error {
  constructor(
    readonly said: Msg,
    options?: ErrorOptions,
  ) {
    super(say(said), options);
    this.name = "SaidError";
  }
}

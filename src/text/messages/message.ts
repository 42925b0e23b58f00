/**
 * A message is a text, or its plural forms: one text per plural category of the locale
 * (Intl.PluralRules: `one`/`other` in English, `one`/`few`/`many`/`other` in Russian, `other`
 * alone in Chinese and Japanese), chosen by the number in its `{count}` placeholder.
 */
export type PluralForms = Partial<Record<Intl.LDMLPluralRule, string>> & { other: string };
export type Message = string | PluralForms;

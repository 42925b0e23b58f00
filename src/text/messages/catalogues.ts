/**
 * The catalogues, as data: `<area>/<locale>.json` beside this file, one area per part of sm121 that
 * speaks to the operator (cli: the commands' reports; spec: the validation problems and fixes of
 * recipes and the site; profile: those of profiles, their values, directives, docker args and
 * overlays; usage: the help; serve: what the providers and serve/ say in Pulumi's output; remote:
 * what remote/ says of a node it cannot reach or a step that failed there). The
 * areas only keep the files short: a key is unique across them. English is the reference: its
 * keys are the MessageKey type, and each area's locales are checked against `Record<keys of its
 * English file, Message>`, so a catalogue that lacks a key fails to compile.
 */
import cliDe from "./cli/de.json";
import cliEn from "./cli/en.json";
import cliEs from "./cli/es.json";
import cliJa from "./cli/ja.json";
import cliRu from "./cli/ru.json";
import cliZh from "./cli/zh.json";
import profileDe from "./profile/de.json";
import profileEn from "./profile/en.json";
import profileEs from "./profile/es.json";
import profileJa from "./profile/ja.json";
import profileRu from "./profile/ru.json";
import profileZh from "./profile/zh.json";
import remoteDe from "./remote/de.json";
import remoteEn from "./remote/en.json";
import remoteEs from "./remote/es.json";
import remoteJa from "./remote/ja.json";
import remoteRu from "./remote/ru.json";
import remoteZh from "./remote/zh.json";
import serveDe from "./serve/de.json";
import serveEn from "./serve/en.json";
import serveEs from "./serve/es.json";
import serveJa from "./serve/ja.json";
import serveRu from "./serve/ru.json";
import serveZh from "./serve/zh.json";
import specDe from "./spec/de.json";
import specEn from "./spec/en.json";
import specEs from "./spec/es.json";
import specJa from "./spec/ja.json";
import specRu from "./spec/ru.json";
import specZh from "./spec/zh.json";
import usageDe from "./usage/de.json";
import usageEn from "./usage/en.json";
import usageEs from "./usage/es.json";
import usageJa from "./usage/ja.json";
import usageRu from "./usage/ru.json";
import usageZh from "./usage/zh.json";
import type { Message } from "./message";

export const LOCALES = ["en", "ru", "zh", "ja", "de", "es"] as const;
export type Locale = (typeof LOCALES)[number];

type Area<E> = Record<Locale, Record<keyof E, Message>>;

export const AREAS = {
  cli: { en: cliEn, ru: cliRu, zh: cliZh, ja: cliJa, de: cliDe, es: cliEs } satisfies Area<typeof cliEn>,
  spec: { en: specEn, ru: specRu, zh: specZh, ja: specJa, de: specDe, es: specEs } satisfies Area<typeof specEn>,
  profile: {
    en: profileEn,
    ru: profileRu,
    zh: profileZh,
    ja: profileJa,
    de: profileDe,
    es: profileEs,
  } satisfies Area<typeof profileEn>,
  usage: {
    en: usageEn,
    ru: usageRu,
    zh: usageZh,
    ja: usageJa,
    de: usageDe,
    es: usageEs,
  } satisfies Area<typeof usageEn>,
  serve: {
    en: serveEn,
    ru: serveRu,
    zh: serveZh,
    ja: serveJa,
    de: serveDe,
    es: serveEs,
  } satisfies Area<typeof serveEn>,
  remote: {
    en: remoteEn,
    ru: remoteRu,
    zh: remoteZh,
    ja: remoteJa,
    de: remoteDe,
    es: remoteEs,
  } satisfies Area<typeof remoteEn>,
};

export type AreaName = keyof typeof AREAS;
export type MessageKey =
  | keyof typeof cliEn
  | keyof typeof specEn
  | keyof typeof profileEn
  | keyof typeof usageEn
  | keyof typeof serveEn
  | keyof typeof remoteEn;

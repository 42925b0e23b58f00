/**
 * The catalogues, as data: `<area>/<locale>.json` beside this file, one area per part of sm121 that
 * speaks to the operator (cli: the commands' reports; spec: the validation problems and fixes of
 * recipes and the site; profile: those of profiles, their values, directives, docker args and
 * overlays; usage: the help; serve: what the providers and serve/ say in Pulumi's output; remote:
 * what remote/ says of a node it cannot reach or a step that failed there; login: how sm121 logs
 * in to a node and what the operator's side holds for it (remote/login); stack: where a stack's
 * state and passphrase live and sm121's Pulumi verbs (cli/backend, cli/stackverbs); state: what the state
 * records and the plan decides, stored as keys and said where printed; keep: what happens between
 * runs, the keeper, the memory tripwire and the wedge checks of doctor). The areas only keep
 * the files short: a key is unique across them. English is the reference: its files are imported
 * and their keys are the MessageKey type. Another locale's file is read when a process first
 * speaks that language (most speak one), and `npm run build` checks every file against its
 * English one (./check).
 */
import cliEn from "./cli/en.json";
import loginEn from "./login/en.json";
import stackEn from "./stack/en.json";
import profileEn from "./profile/en.json";
import remoteEn from "./remote/en.json";
import serveEn from "./serve/en.json";
import specEn from "./spec/en.json";
import stateEn from "./state/en.json";
import usageEn from "./usage/en.json";
import keepEn from "./keep/en.json";
import type { Message } from "./message";

export const LOCALES = ["en", "ru", "zh", "ja", "de", "es"] as const;
export type Locale = (typeof LOCALES)[number];

const ENGLISH = {
  cli: cliEn,
  spec: specEn,
  profile: profileEn,
  usage: usageEn,
  serve: serveEn,
  remote: remoteEn,
  login: loginEn,
  stack: stackEn,
  state: stateEn,
  keep: keepEn,
};

export type AreaName = keyof typeof ENGLISH;
export type MessageKey = { [A in AreaName]: keyof (typeof ENGLISH)[A] }[AreaName];

/** One area's catalogue in one locale: each key's text or plural forms. */
export type Catalogue = Readonly<Record<string, Message>>;

/** An area in every locale: English as imported, each other locale's file read on first use. */
function area(name: AreaName): Readonly<Record<Locale, Catalogue>> {
  const locales: Partial<Record<Locale, Catalogue>> = { en: ENGLISH[name] };
  for (const l of LOCALES) {
    if (l === "en") continue;
    let read: Catalogue | undefined;
    const get = () => (read ??= require(`./${name}/${l}.json`) as Catalogue);
    Object.defineProperty(locales, l, { enumerable: true, get });
  }
  return locales as Record<Locale, Catalogue>;
}

export const AREAS: Readonly<Record<AreaName, Readonly<Record<Locale, Catalogue>>>> = {
  cli: area("cli"),
  spec: area("spec"),
  profile: area("profile"),
  usage: area("usage"),
  serve: area("serve"),
  remote: area("remote"),
  login: area("login"),
  stack: area("stack"),
  state: area("state"),
  keep: area("keep"),
};

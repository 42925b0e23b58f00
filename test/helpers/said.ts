/** A message in English, as a test compares it; undefined stays undefined. */
import { say, type Msg } from "../../src/text/messages";

export function said(m: Msg | undefined): string | undefined {
  return m === undefined ? undefined : say(m, "en");
}

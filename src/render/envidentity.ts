/**
 * The sha256 identity of a rendered .env (seed 001): the body sha256, the profile name and the
 * overlay header line. Equal identity means that `up` writes no new file; the rendered-at time is
 * not part of it.
 */
import { sha256 } from "./identity";

export function envIdentityOf(bodySha256: string, profile: string, overlayLine: string): string {
  return sha256(`${bodySha256}\n${profile}\n${overlayLine}`);
}

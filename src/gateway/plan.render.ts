/**
 * The gateway file's plan as `pulumi preview --diff` shows it: one line per endpoint the file
 * lists, enabled or disabled and why, as the deployments are declared (each served once the up
 * succeeds; a failed serve disables its own endpoints at once), and the endpoints of deployments
 * removed from the site that still run somewhere, disabled. Known at plan time, so that a preview
 * names the endpoints the file adds, drops or disables, where the file's text itself waits for the
 * engines' served models.
 */
import type { GatewayFormat } from "../recipe/types";
import { say, type Msg } from "../text/messages";
import { resolveEndpoints, type GatewayModel } from "./file.render";

export function gatewayPlan(format: GatewayFormat, where: string, models: GatewayModel[]): string {
  const warnings: Msg[] = [];
  const lines = [`${format} backends in ${where}`];
  for (const { m, endpoints } of resolveEndpoints(format, models, warnings)) {
    for (const e of endpoints)
      lines.push(
        `${m.model} from ${m.deployment} on ${e.node} ${e.url} ${e.enabled ? "enabled" : `disabled (${e.why ?? ""})`}`,
      );
  }
  // The plan is an input of the resource: English whatever the language, so that a change of it plans no change.
  for (const w of warnings) lines.push(`warning ${say(w, "en")}`);
  return `${lines.join("\n")}\n`;
}

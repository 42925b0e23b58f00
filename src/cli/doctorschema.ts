/** The JSON `sm121 doctor --json` prints (./doctor), checked before it is printed (./schemas jsonOut). */
import { z } from "zod";

const nullableString = () => z.string().nullable();

export function doctorSchema() {
  return z.strictObject({
    stack: z.string(),
    ok: z.boolean(),
    nodes: z.array(
      z.strictObject({
        node: z.string(),
        protected: z.boolean(),
        reachable: z.boolean(),
        connect: z
          .strictObject({
            kind: z.enum(["host-key", "auth", "unreachable"]),
            message: z.string(),
            fingerprint: nullableString(),
            fix: nullableString(),
          })
          .nullable(),
        checks: z.array(
          z.strictObject({
            check: z.enum([
              "login",
              "command",
              "engine",
              "image",
              "dir",
              "sudo",
              "memory",
              "memory-fit",
              "preflight",
              "engine-version",
              "wedge",
            ]),
            subject: z.string(),
            ok: z.boolean(),
            severity: z.enum(["problem", "warning"]),
            detail: nullableString(),
            hint: nullableString(),
            deployments: z.array(z.string()),
          }),
        ),
        problems: z.int().min(0),
        warnings: z.int().min(0),
      }),
    ),
    /** The keys the login offers, in order (as the program's), and the key files it leaves out. */
    login: z.strictObject({ offered: z.array(z.string()), skipped: z.array(z.string()) }),
    /** What the plan would refuse that no node's check names (the fabric, the memory nodes share). */
    plan: z.array(z.string()),
    /** The memory fit of each deployment on the nodes asked, as the preview would find it. */
    memoryFit: z.array(
      z.strictObject({
        deployment: z.string(),
        verdict: z.enum(["fits", "tight", "refused", "unknown"]),
        lines: z.array(z.string()),
      }),
    ),
  });
}

export type DoctorReport = z.infer<ReturnType<typeof doctorSchema>>;
export type DoctorNode = DoctorReport["nodes"][number];
export type DoctorCheck = DoctorNode["checks"][number];

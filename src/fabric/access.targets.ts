/** A container's access to the node's RDMA devices, as `docker run` flags (see ./env.render.ts). */
import { quote } from "../text/shell";
import type { ContainerAccess } from "../targets/types";

/** The flags of an access, in the order `docker run` gets them; each word quoted where it needs it. */
export function accessFlags(a: ContainerAccess): string[] {
  return [
    ...(a.privileged ? ["--privileged"] : []),
    ...a.devices.map((d) => `--device ${quote(d)}`),
    ...a.capAdd.map((c) => `--cap-add ${quote(c)}`),
    ...a.ulimits.map((u) => `--ulimit ${quote(u)}`),
  ];
}

/**
 * HostCommand is gone: a recipe's hooks now run inside the engine's own sequence (before_serve
 * before every start, after_stop after every stop; see serve/registry). This module stays only so
 * that a stack written by an older sm121, whose state still holds HostCommand resources, can drop
 * them: their delete must not run an after_stop hook while the engine keeps running.
 */
import type * as pulumi from "@pulumi/pulumi";
import { providerLog, settled, type ResourceProvider } from "./common";
import { upgrade } from "./stateVersion";
import { msg, SaidError, t } from "../text/messages";

export function diff(): Promise<pulumi.dynamic.DiffResult> {
  return Promise.resolve({ changes: false });
}

export function create(): Promise<pulumi.dynamic.CreateResult> {
  return Promise.reject(new SaidError(msg("hook.notCreated")));
}

export function update(_id: string, _olds: unknown, news: unknown): Promise<pulumi.dynamic.UpdateResult> {
  return settled(() => ({ outs: upgrade("HostCommand", news).state }));
}

export function remove(_id: string, wire: unknown): Promise<void> {
  return settled(() => {
    const { node } = upgrade("HostCommand", wire).state;
    providerLog(node)(t("hook.dropped"));
  });
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove } satisfies ResourceProvider;

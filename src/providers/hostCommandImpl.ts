/**
 * HostCommand is gone: a recipe's hooks now run inside the engine's own sequence (before_serve
 * before every start, after_stop after every stop; see serve/registry). This module stays only so
 * that a stack written by an older sm121, whose state still holds HostCommand resources, can drop
 * them: their delete must not run an after_stop hook while the engine keeps running.
 */
import type * as pulumi from "@pulumi/pulumi";
import { providerLog } from "./common";

interface Props {
  node: string;
}

export function diff(): Promise<pulumi.dynamic.DiffResult> {
  return Promise.resolve({ changes: false });
}

export function create(): Promise<pulumi.dynamic.CreateResult> {
  return Promise.reject(new Error("HostCommand is no longer created: hooks run with the engine (EngineDeployment)"));
}

export function update(_id: string, _olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
  return Promise.resolve({ outs: news });
}

export function remove(_id: string, props: Props): Promise<void> {
  const what = "the old hook resource is dropped from the state; hooks now run with the engine (nothing runs on the node for this)";
  providerLog(props.node)(what);
  return Promise.resolve();
}

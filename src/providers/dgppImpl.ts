/**
 * Where the provider text of an older release (057f8f4, 9492e6f: docs/guarantees.md "Upgrades") finds
 * DgppProvision's implementation, dist/src/providers/dgppImpl.js, by that path. The implementation lives in
 * src/dgpp/ now; this module only forwards to it, so that such a stack's refresh, up and destroy run it until
 * one up has rewritten the stack's provider text.
 */
export { create, diff, provider, read, remove, update } from "../dgpp/impl.providers";

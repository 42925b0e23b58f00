/**
 * The type token of the component each deployment is (./recipe), and the tokens earlier releases
 * gave it: the component carries them as Pulumi aliases, so that a stack written before the rename
 * keeps its resources (and its children, whose URNs name the parent's type) with one up that
 * changes nothing; `sm121 down` finds the component under any of them.
 */
export const DEPLOYMENT_TYPE = "sm121:index:Deployment";
export const DEPLOYMENT_TYPES_BEFORE = ["sm121:index:Recipe"] as const;

/**
 * The component of the whole site (./site): every deployment, the gateway file and the scrape
 * targets are its children. Earlier releases registered them under the stack itself; each carries
 * the alias of that place (ROOT_ALIAS), so that an older stack keeps its resources.
 */
export const SITE_TYPE = "sm121:index:Site";

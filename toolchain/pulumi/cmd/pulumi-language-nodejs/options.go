package main

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/nodejs/npm"
)

// options are Pulumi.yaml's `runtime.options` for nodejs, the keys upstream's host reads.
type options struct {
	typescript     bool
	tsconfig       string
	nodeargs       string
	production     bool
	packagemanager npm.PackageManagerType
}

func parseOptions(raw map[string]any) (options, error) {
	o := options{typescript: true, packagemanager: npm.AutoPackageManager}
	var err error
	if o.typescript, err = option(raw, "typescript", o.typescript); err != nil {
		return o, err
	}
	if o.production, err = option(raw, "production", false); err != nil {
		return o, err
	}
	if o.tsconfig, err = option(raw, "tsconfig", ""); err != nil {
		return o, err
	}
	if o.nodeargs, err = option(raw, "nodeargs", ""); err != nil {
		return o, err
	}
	pm, err := option(raw, "packagemanager", string(npm.AutoPackageManager))
	if err != nil {
		return o, err
	}
	switch t := npm.PackageManagerType(pm); t {
	case npm.AutoPackageManager, npm.NpmPackageManager, npm.YarnPackageManager, npm.PnpmPackageManager, npm.BunPackageManager:
		o.packagemanager = t
	default:
		return o, fmt.Errorf("Pulumi.yaml runtime.options.packagemanager is %q; use auto, npm, yarn, pnpm or bun", pm)
	}
	return o, nil
}

// option is raw[key] when it has the type T, the default when it is absent, else an error.
func option[T bool | string](raw map[string]any, key string, def T) (T, error) {
	v, ok := raw[key]
	if !ok {
		return def, nil
	}
	t, ok := v.(T)
	if !ok {
		return def, fmt.Errorf("Pulumi.yaml runtime.options.%s must be a %T, got %v", key, def, v)
	}
	return t, nil
}

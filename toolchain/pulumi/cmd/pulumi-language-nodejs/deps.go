package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/nodejs/npm"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// InstallDependencies (`pulumi install`, and `pulumi up` of a fresh checkout) runs the package
// manager's install in the program's workspace root, its output streamed to the CLI as it comes.
// The package manager is chosen as upstream chooses it (runtime.options.packagemanager, else the
// lock file: npm unless yarn.lock, pnpm-lock.yaml or bun.lock is there), with the SDK's own code.
func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest, server pulumirpc.LanguageRuntime_InstallDependenciesServer) error {
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(server, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()
	dir := req.GetInfo().GetProgramDirectory()
	opts, err := parseOptions(req.GetInfo().GetOptions().AsMap())
	if err != nil {
		return err
	}
	root, err := npm.FindWorkspaceRoot(dir)
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "Detected workspace root at %s\n", root)
		dir = root
	case !errors.Is(err, npm.ErrNotInWorkspace):
		return fmt.Errorf("looking for the npm workspace root of %s: %w", dir, err)
	}
	fmt.Fprintf(stdout, "Installing dependencies...\n\n")
	name, err := npm.Install(server.Context(), opts.packagemanager, dir, opts.production, stdout, stderr)
	if err != nil {
		return fmt.Errorf("%s install in %s failed: %w", name, dir, err)
	}
	fmt.Fprintf(stdout, "Finished installing dependencies\n\n")
	return closer.Close()
}

// GetProgramDependencies lists the program's packages for `pulumi about`, from the lock file.
func (h *host) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	dir := req.GetInfo().GetProgramDirectory()
	opts, err := parseOptions(req.GetInfo().GetOptions().AsMap())
	if err != nil {
		return nil, err
	}
	pm, err := npm.ResolvePackageManager(opts.packagemanager, dir)
	if err != nil {
		return nil, fmt.Errorf("choosing the package manager of %s: %w", dir, err)
	}
	packages, err := pm.ListPackages(ctx, dir, req.GetTransitiveDependencies())
	if err != nil {
		return nil, fmt.Errorf("listing the packages of %s (run `pulumi install` first): %w", dir, err)
	}
	deps := make([]*pulumirpc.DependencyInfo, 0, len(packages))
	for _, p := range packages {
		deps = append(deps, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}

// About names node, its version and the package manager for `pulumi about`.
func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not on PATH: %w", err)
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", node, err)
	}
	resp := &pulumirpc.AboutResponse{Executable: node, Version: strings.TrimSpace(string(out)), Metadata: map[string]string{}}
	opts, err := parseOptions(req.GetInfo().GetOptions().AsMap())
	if err != nil {
		return nil, err
	}
	if pm, err := npm.ResolvePackageManager(opts.packagemanager, req.GetInfo().GetProgramDirectory()); err == nil {
		resp.Metadata["packagemanager"] = pm.Name()
		if v, ok := npmVersion(pm.Name()); ok {
			resp.Metadata["packagemanagerVersion"] = v
		} else if v, err := pm.Version(); err == nil {
			resp.Metadata["packagemanagerVersion"] = v.String()
		}
	}
	return resp, nil
}

// RuntimeOptionsPrompts asks nothing: `pulumi new` is not supported by this host, and an existing
// project's options are in its Pulumi.yaml.
func (h *host) RuntimeOptionsPrompts(context.Context, *pulumirpc.RuntimeOptionsRequest) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

// npmVersion reads npm's version from its package.json (the `npm` on PATH is the package's
// bin/npm-cli.js, behind links), sparing `npm --version`: the CLI asks About on every preview and
// up, before the program starts.
func npmVersion(name string) (string, bool) {
	if name != "npm" {
		return "", false
	}
	bin, err := exec.LookPath("npm")
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(real)), "package.json"))
	if err != nil {
		return "", false
	}
	var pkg struct{ Name, Version string }
	if json.Unmarshal(data, &pkg) != nil || pkg.Name != "npm" || pkg.Version == "" {
		return "", false
	}
	return pkg.Version, true
}

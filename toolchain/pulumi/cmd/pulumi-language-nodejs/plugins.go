package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// GetRequiredPackages lists the resource plugins that the program's node_modules declare
// ("pulumi": {"resource": true, "name": ..., "version": ...} in a package.json).
func (h *host) GetRequiredPackages(_ context.Context, req *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	plugins, err := resourcePackages(req.GetInfo().GetProgramDirectory())
	if err != nil {
		return nil, err
	}
	deps := make([]*pulumirpc.PackageDependency, 0, len(plugins))
	for _, p := range plugins {
		deps = append(deps, &pulumirpc.PackageDependency{Name: p.Name, Kind: "resource", Version: p.Version, Server: p.Server})
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: deps}, nil
}

func (h *host) GetRequiredPlugins(_ context.Context, req *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	plugins, err := resourcePackages(req.GetInfo().GetProgramDirectory())
	if err != nil {
		return nil, err
	}
	deps := make([]*pulumirpc.PluginDependency, 0, len(plugins))
	for _, p := range plugins {
		deps = append(deps, &pulumirpc.PluginDependency{Name: p.Name, Kind: "resource", Version: p.Version, Server: p.Server})
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: deps}, nil
}

type pluginPackage struct{ Name, Version, Server string }

func resourcePackages(programDir string) ([]pluginPackage, error) {
	root := filepath.Join(programDir, "node_modules")
	var found []pluginPackage
	seen := map[string]bool{}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "@") {
			scoped, _ := os.ReadDir(filepath.Join(root, e.Name()))
			for _, s := range scoped {
				dirs = append(dirs, filepath.Join(root, e.Name(), s.Name()))
			}
		} else {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, "package.json"))
		if err != nil {
			continue
		}
		var pkg struct {
			Pulumi struct {
				Resource bool   `json:"resource"`
				Name     string `json:"name"`
				Version  string `json:"version"`
				Server   string `json:"server"`
			} `json:"pulumi"`
		}
		if json.Unmarshal(data, &pkg) != nil || !pkg.Pulumi.Resource || pkg.Pulumi.Name == "" {
			continue
		}
		key := pkg.Pulumi.Name + "@" + pkg.Pulumi.Version
		if !seen[key] {
			seen[key] = true
			found = append(found, pluginPackage{pkg.Pulumi.Name, pkg.Pulumi.Version, pkg.Pulumi.Server})
		}
	}
	return found, nil
}

// Command pulumi-language-nodejs is the Node.js language host that the Pulumi CLI starts to run a
// Node.js program.
//
// Why it lives here: upstream's host (sdk/nodejs/cmd/pulumi-language-nodejs in pulumi/pulumi) is
// an untagged Go module, and the module proxy this project can reach serves none of its
// pseudo-versions (see README, "Toolchain"). This host speaks the same LanguageRuntime gRPC
// protocol from the pinned sdk/v3 and runs the same entry point, @pulumi/pulumi's cmd/run, with the
// same flags and environment, so the program, the engine and the SDK are all the real ones.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	pbempty "google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is set with -ldflags "-X main.version=..." to the CLI version it was built with.
var version = "3.274.1"

// bailExitCode is what @pulumi/pulumi's run script exits with after it reported the error itself.
const bailExitCode = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	engineAddress string
}

func main() {
	args := os.Args[1:]
	engineAddress := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			engineAddress = a // the engine passes its address as the last positional argument
		}
	}
	h := &host{engineAddress: engineAddress}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: could not start the gRPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port)
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-nodejs: %v\n", err)
		os.Exit(1)
	}
}

func (h *host) Handshake(_ context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *pbempty.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

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

// Run starts `node @pulumi/pulumi/cmd/run` for the program and waits for it.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	info := req.GetInfo()
	programDir := info.GetProgramDirectory()
	if programDir == "" {
		programDir = req.GetPwd()
	}
	runScript, err := resolveRunScript(programDir)
	if err != nil {
		return &pulumirpc.RunResponse{Error: err.Error()}, nil
	}
	entry := info.GetEntryPoint()
	if entry == "" {
		entry = req.GetProgram()
	}
	if entry == "" {
		entry = "."
	}
	opts := info.GetOptions().AsMap()
	nodeArgs := strings.Fields(stringOption(opts, "nodeargs"))
	args := append(nodeArgs, runScript,
		"--monitor", req.GetMonitorAddress(),
		"--engine", h.engineAddress,
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--parallel", strconv.Itoa(int(req.GetParallel())))
	if org := req.GetOrganization(); org != "" {
		args = append(args, "--organization", org)
	}
	if root := info.GetRootDirectory(); root != "" {
		args = append(args, "--root-directory", root)
	}
	if req.GetDryRun() {
		args = append(args, "--dry-run")
	}
	args = append(args, entry)
	args = append(args, req.GetArgs()...)

	env, err := runEnv(req, opts)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Dir = req.GetPwd()
	cmd.Env = env
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			if exit.ExitCode() == bailExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exit.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run node: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

func (h *host) About(context.Context, *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("node --version: %w", err)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	return &pulumirpc.AboutResponse{Executable: "node", Version: v}, nil
}

func runEnv(req *pulumirpc.RunRequest, opts map[string]any) ([]string, error) {
	// Empty maps and lists must be sent as {} and [], not null: the SDK calls Object.keys on them.
	cfg := req.GetConfig()
	if cfg == nil {
		cfg = map[string]string{}
	}
	keys := req.GetConfigSecretKeys()
	if keys == nil {
		keys = []string{}
	}
	config, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	env := append(os.Environ(), "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	typescript := true
	if v, ok := opts["typescript"].(bool); ok {
		typescript = v
	}
	env = append(env, "PULUMI_NODEJS_TYPESCRIPT="+strconv.FormatBool(typescript))
	if ts := stringOption(opts, "tsconfig"); ts != "" {
		env = append(env, "PULUMI_NODEJS_TSCONFIG_PATH="+ts)
	}
	return env, nil
}

func stringOption(opts map[string]any, key string) string {
	if v, ok := opts[key].(string); ok {
		return v
	}
	return ""
}

// resolveRunScript finds @pulumi/pulumi/cmd/run the way Node resolves it from the program.
func resolveRunScript(programDir string) (string, error) {
	cmd := exec.Command("node", "-e", "process.stdout.write(require.resolve('@pulumi/pulumi/cmd/run'))")
	cmd.Dir = programDir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("could not find @pulumi/pulumi from %s (run `npm ci` there first): %w", programDir, err)
	}
	return string(out), nil
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
